#pragma once
// y[i] = average of x[i-1], x[i], x[i+1] (ends clamped); n elements, on the device
void smooth(const float* x, float* y, int n);

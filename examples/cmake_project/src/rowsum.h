#pragma once
// sums[r] = scale(sum of row r) of a rows x cols row-major matrix, on the device
void row_sums(const float* matrix, float* sums, int rows, int cols);

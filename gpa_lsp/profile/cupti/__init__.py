"""The CUPTI collector: an injection library (C, built on first use) and its reader."""

# the file the injection library writes its records to, in the folder GPA_CUPTI_OUT names (gpa_inject.c)
OUTPUT = "cupti.txt"

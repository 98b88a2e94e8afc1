"""gpa-lsp: a GPU performance advisor (the GPA method) for Hopper, in the editor."""

__version__ = "0.1.0"

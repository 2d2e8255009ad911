"""End-to-end tests: the kernel explorer in a real JupyterLab, driven through headless Chromium."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("deepbandits")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+unknown"

#: What ``deepbandits --version`` prints.
VERSION_LINE = f"deepbandits {__version__}"

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "lib"))


def pytest_configure(config):
    config.addinivalue_line("markers", "e2e: builds and boots real kernels (minutes)")

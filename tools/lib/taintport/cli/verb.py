# SPDX-License-Identifier: GPL-2.0
"""A verb of the command line: its options, the typed request its arguments
become (every value checked before any work), and the one function that
does it (kunit.py's shape: the library never sees argparse)."""
import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from taintport.cache import Cache

Request = TypeVar("Request")


@dataclass(frozen=True)
class Verb(Generic[Request]):
    name: str
    help: str
    options: Callable[[argparse.ArgumentParser], None]
    request: Callable[[argparse.Namespace], Request]
    run: Callable[[Request, Cache], int]
    description: str | None = None  # a longer text for `taintport VERB --help`


AnyVerb = Verb[Any]

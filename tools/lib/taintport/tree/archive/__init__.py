# SPDX-License-Identifier: GPL-2.0
"""The Debian archive, as the fetch stage reads it: a private apt state per
suite (apt.py), the suites' indexes and what they publish (indexes.py,
published.py), the pinned downloads (download.py), the binary kernel built
from an upload (images.py) and the one writer that moves a descriptor's pins
(pins.py). The host's apt setup is never read or changed.
"""

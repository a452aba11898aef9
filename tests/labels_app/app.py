"""The known-truth shop deployment of ``labels_support``, served by ``langgraph dev``.

The raw threshold is 0.5, 35% of the passed calls are spot-checked (seeded by thread id), and
labels go to the server's own store under the deployment ``shop-server``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # labels_support, beside tests

from labels_support import guarded_shop

from inferact_langgraph.labels import ReviewLabels

# The server supplies the checkpointer and the store.
graph = guarded_shop(
    spot_check=0.35,
    spot_check_seed=31,
    labels=ReviewLabels(deployment="shop-server"),
)

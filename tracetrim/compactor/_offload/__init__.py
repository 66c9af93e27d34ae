"""The size-based offload strategy, in one folder: size rules instead of a judge.

`_config` (the validated rules), `_select` (token counts, results over the limit, message groups),
`_summary` (the summary messages that replace compressed groups), `_strategy` (`OffloadStrategy`, which
awaits the `tracetrim.decision.Summarizer` it was given) and `_restore` (`restore_offloaded`).
Public homes: `tracetrim.OffloadStrategy`, `tracetrim.OffloadConfig`, `tracetrim.OffloadMode`,
`tracetrim.restore_offloaded` (and the same names in `tracetrim.compactor`).
"""

from tracetrim.compactor._offload._config import OffloadConfig, OffloadMode
from tracetrim.compactor._offload._restore import restore_offloaded
from tracetrim.compactor._offload._strategy import OffloadStrategy

__all__ = ["OffloadConfig", "OffloadMode", "OffloadStrategy", "restore_offloaded"]

"""The protocol's enum values as the package names them, shared by the answers' modules.

Kept apart from ``answers`` so that a module that only needs a name of an enum
(``name_ids``) loads without the record types.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing's names for annotations only (postponed): importing typing is 3 ms of `import stol`
if TYPE_CHECKING:
    from typing import Tuple

_MATCHES = ("", "scientific", "common", "synonym")
_MATCH_KINDS = ("none", "exact", "capitalised", "common")  # MatchKind's names without MATCH_KIND_, lower case


def _name(table: Tuple[str, ...], value: int) -> str:
    # Open enums (§10): a value from a newer server is kept as its number.
    return table[value] if 0 <= value < len(table) else str(value)

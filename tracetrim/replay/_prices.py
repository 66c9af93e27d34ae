"""The prompt-cache price model: cache reads and writes as ratios of the plain input price, with presets."""

from __future__ import annotations

import attrs

from tracetrim._validators import FieldValueError, non_negative_number


@attrs.frozen(kw_only=True)
class CachePrices:
    """What a prompt token costs, as a ratio of the provider's plain input price.

    The prefix of a prompt that is unchanged since the previous model call is a cache read
    (``read`` times the input price); everything from the first changed message on is written to
    the cache (``write`` times it). ``name`` says which provider's ratios these are. Cache lifetimes
    and minimum cacheable lengths are not modelled: every step is taken to come within the cache's
    lifetime, and every prefix to be long enough.
    """

    name: str = "custom"
    read: float = attrs.field(default=1.0, validator=non_negative_number)
    write: float = attrs.field(default=1.0, validator=non_negative_number)

    def cost(self, read_tokens: int | float, write_tokens: int | float) -> float:
        """The price of one prompt, in plain-input-token units."""
        return read_tokens * self.read + write_tokens * self.write

    @property
    def ratios(self) -> tuple[float, float]:
        """``(read, write)``: what `tracetrim.CompactorConfig.cache_prices` takes."""
        return (self.read, self.write)

    def describe(self) -> str:
        """One line, e.g. ``anthropic: cache read 0.1x, write 1.25x``."""
        return f"{self.name}: cache read {self.read:g}x, write {self.write:g}x"


ANTHROPIC = CachePrices(name="anthropic", read=0.1, write=1.25)
"""Anthropic's prompt caching: a cache read costs 0.1x the input price, a (5-minute) cache write 1.25x."""
OPENAI = CachePrices(name="openai", read=0.5, write=1.0)
"""OpenAI's automatic prompt caching: cached input at half price, no premium for writing."""
NO_CACHE = CachePrices(name="none", read=1.0, write=1.0)
"""No prompt cache: every prompt token at the plain input price."""

PRESETS: dict[str, CachePrices] = {p.name: p for p in (ANTHROPIC, OPENAI, NO_CACHE)}
"""The presets by name: ``anthropic``, ``openai``, ``none``."""


def prices(
    preset: str = "anthropic", *, read: float | None = None, write: float | None = None
) -> CachePrices:
    """A preset, with ``read`` or ``write`` overridden when given (then named ``custom``)."""
    try:
        base = PRESETS[preset]
    except KeyError:
        raise FieldValueError(
            f"unknown cache price preset {preset!r}; choose one of {', '.join(PRESETS)}"
        ) from None
    if read is None and write is None:
        return base
    return CachePrices(
        name="custom",
        read=base.read if read is None else read,
        write=base.write if write is None else write,
    )

"""Which places' cuts a worker keeps for the parameter variants of their matches
(``cutout.extract._forget_places``): by size, the oldest large place given up first."""
from harnessgen.cutout import extract


class _Place:
    def __init__(self, size: int):
        self.size = size


def test_a_large_place_goes_before_small_ones_and_the_newest_always_stays(monkeypatch):
    monkeypatch.setattr(extract, "_CUTS_AT", {})
    monkeypatch.setattr(extract, "_CUTS_KEPT_NODES", 100)
    monkeypatch.setattr(extract, "_LARGE_PLACE_NODES", 50)
    kept = extract._CUTS_AT
    kept.update(small=_Place(10), large=_Place(60), other=_Place(10), newest=_Place(30))
    extract._forget_places()
    assert list(kept) == ["small", "other", "newest"]
    kept["huge"] = _Place(500)                       # the newest, larger than the bound alone
    extract._forget_places()
    assert list(kept) == ["huge"]


def test_small_places_go_oldest_first_past_the_count(monkeypatch):
    monkeypatch.setattr(extract, "_CUTS_AT", {})
    monkeypatch.setattr(extract, "_CUTS_KEPT", 3)
    kept = extract._CUTS_AT
    kept.update(a=_Place(1), b=_Place(1), c=_Place(1), d=_Place(1))
    extract._forget_places()
    assert list(kept) == ["b", "c", "d"]

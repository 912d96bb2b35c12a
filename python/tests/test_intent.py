"""fampool's intent-based placement from Python (docs/intent.md) on the embedded model with two
memory tiers beside its DRAM: server 1 persistent, server 2 far (64 MiB)."""
import numpy as np
import pytest

import fampool


@pytest.fixture
def tiers(fam_env):
    home = fam_env
    config = home / "tiers.yaml"
    config.write_text("memory_tiers:\n"
                      f"  - {{kind: persistent, dir: {home}/pm, bandwidth: 200MB/s, "
                      "latency: 20us}\n"
                      f"  - {{kind: far, dir: {home}/far, bandwidth: 100MB/s, latency: 50us, "
                      "capacity: 64MiB}\n")
    return str(config)


def test_a_kind_constraint_places_on_the_tier(tiers, monkeypatch):
    monkeypatch.setenv("FAMPOOL_CONFIG", tiers)
    with fampool.Fam(options={"runtime": "NONE"}) as fam:
        cold = fam.create_region_intent("cold", 8 << 20, kind="far")
        placed = fam.placement(cold)
        assert placed["kind"] == "far" and placed["hints"] == []
        assert "kind far: 2" in placed["reason"], placed["reason"]
        assert fam.stat_region(cold)["memory_servers"] == [2]
        a = fampool.array(fam, cold, "x", np.arange(1000))
        assert a[10:13].tolist() == [10, 11, 12]
        kept = fam.create_region_intent("kept", 8 << 20, hints=["across_jobs"])
        assert fam.stat_region(kept)["memory_type"] == "persistent"
        assert fam.placement(kept)["hints"] == ["across_jobs"]
        plain = fam.placement(fam.create_region("plain", 8 << 20))
        assert (plain["hints"], plain["kind"], plain["servers"]) == ([], "any", [])
        assert plain["reason"].startswith("no intent"), plain["reason"]


def test_bad_intents_are_refused_with_the_cause(tiers, monkeypatch):
    monkeypatch.setenv("FAMPOOL_CONFIG", tiers)
    with fampool.Fam(options={"runtime": "NONE"}) as fam:
        with pytest.raises(ValueError, match="no hint \"fast\""):
            fam.create_region_intent("r", 1 << 20, hints=["fast"])
        with pytest.raises(ValueError, match="no memory kind \"hbm\""):
            fam.create_region_intent("r", 1 << 20, kind="hbm")
        with pytest.raises(ValueError, match="at most 16 servers"):
            fam.create_region_intent("r", 1 << 20, servers=list(range(17)))
        with pytest.raises(fampool.FamError) as caught:  # contradictory hints
            fam.create_region_intent("r", 1 << 20, hints=["volatile", "persistent"])
        assert caught.value.name == "FAM_ERR_INVALID"
        with pytest.raises(fampool.FamError) as caught:  # no such server
            fam.create_region_intent("r", 1 << 20, servers=[7])
        assert caught.value.name == "FAM_ERR_RESOURCE" and "7" in caught.value.message

"""docs/configuration.md names every key a configuration or cluster file may hold: the set in
src/common/config_keys.cc (the keys the loaders accept; anything else is refused)."""
import os
import re

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))


def accepted_keys():
    with open(os.path.join(SOURCE, "src", "common", "config_keys.cc")) as f:
        text = f.read()
    start = text.index("static const std::set<std::string> keys = {")
    body = text[start:text.index("};", start)]
    body = re.sub(r"//[^\n]*", "", body)  # comments may quote words
    return re.findall(r'"([^"]+)"', body)


def test_keys_are_found_in_the_source():
    keys = accepted_keys()
    assert len(keys) > 50
    assert "authentication" in keys and "munge_socket" in keys


def test_every_key_is_documented():
    with open(os.path.join(SOURCE, "docs", "configuration.md")) as f:
        doc = f.read()
    missing = [key for key in accepted_keys() if f"`{key}`" not in doc]
    assert not missing, f"docs/configuration.md does not name: {', '.join(missing)}"

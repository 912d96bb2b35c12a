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


def known_variables():
    with open(os.path.join(SOURCE, "src", "common", "config_keys.cc")) as f:
        text = f.read()
    start = text.index("static const std::set<std::string> names = {")
    return set(re.findall(r'"(FAMPOOL_[A-Z0-9_]+)"', text[start:text.index("};", start)]))


def test_every_variable_the_programs_read_is_known_and_documented():
    """EnvironmentVariables() (the names a misspelling is compared with) holds every FAMPOOL_*
    name the library, servers, CLI and Python package quote, and the docs name each."""
    known = known_variables()
    assert "FAMPOOL_CONFIG" in known and "FAMPOOL_PROVIDER" in known
    quoted = set()
    for top in ("src", "tools", os.path.join("python", "fampool")):
        for folder, _, files in os.walk(os.path.join(SOURCE, top)):
            for name in files:
                if name.endswith((".cc", ".h", ".py")):
                    with open(os.path.join(folder, name), errors="replace") as f:
                        quoted |= set(re.findall(r'"(FAMPOOL_[A-Z0-9_]+)"', f.read()))
    assert quoted - known == set(), "read but not in EnvironmentVariables()"
    docs = ""
    for name in os.listdir(os.path.join(SOURCE, "docs")):
        if name.endswith(".md"):
            with open(os.path.join(SOURCE, "docs", name)) as f:
                docs += f.read()
    undocumented = [name for name in sorted(known) if name not in docs]
    assert not undocumented, f"docs/ do not name: {', '.join(undocumented)}"

"""docs/cli.md documents every program, command and option the build has: the subcommands of
`fampool --help`, each subcommand's options in its own section, and fampool-server's and
fampool-delayline's options (issue 19: "every ... CLI command documented")."""
import os
import re
import subprocess

BUILD_DIR = os.path.abspath(os.environ.get("FAMPOOL_BUILD_DIR", "build"))
SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOLS = os.path.join(BUILD_DIR, "tools")


def help_of(*argv):
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL)
    return done.stdout + done.stderr


def long_options(text):
    """The --options a help text lists (not --help)."""
    names = set(re.findall(r"^\s+(?:-\w,)?(--[a-z][a-z0-9-]*)", text, re.M))
    names |= set(re.findall(r"(--[a-z][a-z0-9-]*) [A-Z]", text.split("\n", 2)[1]))
    return sorted(names - {"--help"})


def sections(markdown):
    """Heading -> its text, up to the next heading of any level."""
    out, heading = {}, ""
    for line in markdown.splitlines():
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
            out[heading] = ""
        else:
            out[heading] = out.get(heading, "") + line + "\n"
    return out


DOCS = open(os.path.join(SOURCE_DIR, "docs", "cli.md")).read()
SECTIONS = sections(DOCS)


def subcommands():
    text = help_of(os.path.join(TOOLS, "fampool"), "--help")
    listed = text.split("Subcommands:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\s+([a-z][a-z-]*)\s", listed, re.M)


def test_every_fampool_command_has_a_section_with_each_of_its_options():
    commands = subcommands()
    assert {"up", "down", "status", "ls", "stat", "rm", "backup", "restore", "bench"} <= \
        set(commands)
    missing = []
    for command in commands:
        text = "".join(body + heading for heading, body in SECTIONS.items()
                       if re.match(rf"fampool {command}\b", heading))
        if not text:
            missing.append(f"no section `### fampool {command} ...`")
            continue
        help_text = help_of(os.path.join(TOOLS, "fampool"), command, "--help")
        assert "Usage:" in help_text, f"fampool {command} --help printed: {help_text}"
        for option in long_options(help_text):
            if option not in text:
                missing.append(f"fampool {command} {option}")
    assert not missing, "docs/cli.md lacks: " + "; ".join(missing)


def test_the_server_programs_options_are_documented():
    missing = []
    for program in ("fampool-server", "fampool-delayline"):
        path = os.path.join(TOOLS, program)
        if not os.path.exists(path):
            path = os.path.join(TOOLS, "delayline", program)
        options = long_options(help_of(path, "--help"))
        assert options, f"{program} --help lists no option"
        for option in options:
            if not re.search(rf"{program}\b[^\n]*{option}|{option}[^\n]*{program}", DOCS) and \
                    option not in "".join(b for h, b in SECTIONS.items() if program in h):
                missing.append(f"{program} {option}")
    assert not missing, "docs/cli.md lacks: " + "; ".join(missing)

"""Names that cannot be typed: a region and an item whose names hold a newline, a terminal
escape and a tab, made through the C API, are shown by `fampool ls`, `stat` and `status` in
the shell's $'...' form, one line each and without the raw bytes; the form they print can be
given back as an argument (here the bytes it stands for)."""
from test_cli import (fampool, make_region_with_item, module_cluster,  # noqa: F401
                      remove_regions, shared_cluster)

REGION = "evil\n\x1b[31mred"
ITEM = "it\tem's"
REGION_SHOWN = "$'evil\\n\\x1b[31mred'"
ITEM_SHOWN = "$'it\\tem\\'s'"


def test_names_with_control_characters_are_shown_in_a_typeable_form(shared_cluster):
    run_dir, _ = shared_cluster
    try:
        make_region_with_item(run_dir, REGION, ITEM, 8 << 20, 4096)
        for argv in (["ls"], ["status"], ["ls", REGION], ["stat", REGION, ITEM]):
            shown = fampool(*argv, "--run-dir", run_dir)
            assert shown.returncode == 0, (argv, shown.stdout + shown.stderr)
            assert "\x1b" not in shown.stdout and "\t" not in shown.stdout, (argv, shown.stdout)
            assert "evil\n" not in shown.stdout, (argv, shown.stdout)
            expected = ITEM_SHOWN if argv[0] != "ls" or len(argv) > 1 else REGION_SHOWN
            if argv[0] == "status":
                expected = REGION_SHOWN
            assert expected in shown.stdout, (argv, shown.stdout)
    finally:
        remove_regions(run_dir, REGION)

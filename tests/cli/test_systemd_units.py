"""The systemd units of the services (packaging/systemd): `systemd-analyze verify` accepts them
as installed, with the built fampool-server in ExecStart (the install puts the installed one
there), for an instance of each template (metadata shard 0, memory server 1)."""
import os
import shutil
import subprocess
import tempfile

import pytest

from test_cli import BUILD_DIR

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
UNITS = {"fampool-metadata@.service": "fampool-metadata@0.service",
         "fampool-memory@.service": "fampool-memory@1.service"}


def test_systemd_analyze_verify_accepts_the_units():
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("no systemd-analyze on this machine (Debian's systemd package has it)")
    server = os.path.join(BUILD_DIR, "tools", "fampool-server")
    assert os.access(server, os.X_OK), server
    with tempfile.TemporaryDirectory(prefix="fampool-units-") as folder:
        paths = []
        for template, instance in UNITS.items():
            with open(os.path.join(SOURCE, "packaging", "systemd", template + ".in")) as f:
                text = f.read().replace("@FAMPOOL_SERVER@", server)
            assert "@FAMPOOL" not in text, f"a placeholder left in {template}.in"
            path = os.path.join(folder, instance)
            with open(path, "w") as f:
                f.write(text)
            paths.append(path)
        verify = subprocess.run([analyze, "verify", "--man=no", *paths], capture_output=True,
                                text=True, timeout=60)
        report = verify.stdout + verify.stderr
        assert verify.returncode == 0, report
        # Warnings (an unknown key, a bad value) leave the status 0: none may name our units.
        # (Checked by hand: a misspelt key is reported so, a missing program fails.)
        ours = [line for line in report.splitlines() if "fampool-" in line]
        assert not ours, report

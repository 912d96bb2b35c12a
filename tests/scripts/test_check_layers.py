"""scripts/check-layers: every include of the tree points down the layers, and an include that
points up or sideways is reported with the file, the line and the rule."""
import os
import subprocess
import sys

import pytest

SOURCE = os.environ.get("FAMPOOL_SOURCE_DIR",
                        os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..")))
CHECK = os.path.join(SOURCE, "scripts", "check-layers")


def run(repo):
    return subprocess.run([sys.executable, CHECK, repo], capture_output=True, text=True,
                          timeout=60)


def tree(tmp_path, files):
    for path, text in files.items():
        full = tmp_path / path
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(text)
    return str(tmp_path)


def test_the_repository_passes():
    result = run(SOURCE)
    assert result.returncode == 0, result.stdout
    assert "every include points down" in result.stdout


def test_downward_and_public_includes_pass(tmp_path):
    repo = tree(tmp_path, {
        "src/client/a.cc": '#include "meta/x.h"\n#include "common/y.h"\n#include <fam/fam.h>\n'
                           '#include <vector>\n#include "client/b.h"\n',
        "src/transport/shm/s.cc": '#include "transport/transport.h"\n#include "memserver/h.h"\n',
        "examples/e.cc": '#include <fam/fam.h>\n',
    })
    result = run(repo)
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize("path, include, why", [
    ("src/common/a.h", "meta/lmdb.h", "common (row 0)"),
    ("src/meta/a.cc", "memserver/heap.h", "peers"),
    ("src/memserver/a.cc", "meta/lmdb.h", "peers"),
    ("src/transport/transport.h", "client/descriptor_state.h", "up"),
    ("src/transport/shm/a.cc", "transport/fabric/b.h", "peers"),
    ("src/fabric/a.cc", "transport/transport.h", "up"),
    ("src/transport/redundant/a.cc", "transport/fabric/b.h", "peers"),
    ("src/memserver/a.cc", "transport/fabric/fabric_channel.h", "up"),
])
def test_an_include_that_does_not_point_down_fails_naming_file_line_and_rule(
        tmp_path, path, include, why):
    repo = tree(tmp_path, {path: f'// {why}\n#include "{include}"\n'})
    result = run(repo)
    assert result.returncode == 1, result.stdout
    assert f"{path}:2: includes {include}" in result.stdout, result.stdout
    assert "may include only" in result.stdout


@pytest.mark.parametrize("path, include", [
    ("src/transport/redundant/redundant_channel.h", "rpc/fampool.pb.h"),
    ("src/transport/fabric/a.cc", "rpc/memory_server_client.h"),
    ("src/transport/transport.h", "meta/client/metadata_service.h"),
])
def test_the_data_path_including_the_control_paths_code_fails(tmp_path, path, include):
    repo = tree(tmp_path, {path: f'#include <vector>\n#include "{include}"\n'})
    result = run(repo)
    assert result.returncode == 1, result.stdout
    assert f"{path}:2: includes {include}; the data path reaches memory servers through " \
           "MemoryServer" in result.stdout, result.stdout


def test_an_example_using_an_internal_header_fails(tmp_path):
    repo = tree(tmp_path, {"examples/e.cc": '#include "common/error.h"\n'})
    result = run(repo)
    assert result.returncode == 1
    assert "examples and apps use the public headers" in result.stdout


def test_an_app_using_an_internal_header_fails(tmp_path):
    repo = tree(tmp_path, {"apps/a/a.cc": '#include "client/fam_impl.h"\n'})
    result = run(repo)
    assert result.returncode == 1
    assert "apps/a/a.cc:1" in result.stdout


def test_a_folder_outside_the_layers_is_reported(tmp_path):
    repo = tree(tmp_path, {"src/newthing/a.cc": "int x;\n"})
    result = run(repo)
    assert result.returncode == 1
    assert "not in any layer" in result.stdout


def test_a_pes_header_that_reaches_a_service_fails_naming_the_chain(tmp_path):
    repo = tree(tmp_path, {
        "src/client/a.h": '#include "meta/client/b.h"\n',
        "src/meta/client/b.h": '#include "transport/none.h"\n#include "common/c.h"\n',
        "src/common/c.h": "#include <lmdb.h>\n",
        "src/client/d.cc": '#include "meta/metadata_store.h"\n',  # a .cc may: the embedded model
    })
    result = run(repo)
    assert result.returncode == 1, result.stdout
    assert "src/client/a.h -> meta/client/b.h -> common/c.h -> lmdb.h: a PE's header reaches " \
           "LMDB" in result.stdout, result.stdout
    assert "d.cc" not in result.stdout


@pytest.mark.parametrize("header, include, why", [
    ("include/fam/x.h", "memserver/memory_server_service.h", "a memory server's service"),
    ("src/transport/t.h", "meta/store_internals.h", "a header of the metadata service"),
])
def test_a_pes_header_including_a_service_header_fails(tmp_path, header, include, why):
    repo = tree(tmp_path, {header: f'#include "{include}"\n'})
    result = run(repo)
    assert result.returncode == 1, result.stdout
    assert f"{header} -> {include}: a PE's header reaches {why}" in result.stdout, result.stdout

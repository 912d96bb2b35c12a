"""A site moving from OpenFAM: services and PEs started from OpenFAM's own configuration files.

Writes the four files OpenFAM reads, in OpenFAM's format (comments, key names, value forms
and the values its shipped files use, with this test's ports and directories), under
OPENFAM_ROOT/config; starts the services with `fampool up --config $OPENFAM_ROOT/config`; runs
a program written the way OpenFAM's examples are under mpirun with only OPENFAM_ROOT set, so
that fam_initialize reads fam_pe_config.yaml (runtime PMIX, FamThreadModel single).
"""
import os
import re
import shutil
import subprocess
import tempfile

import pytest

from test_cli import (BUILD_DIR, fampool, free_base_port, make_region_with_item,  # noqa: F401
                      run_c_api, run_dir)

WORKER = os.path.join(BUILD_DIR, "tests", "workers", "openfam_style")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


@pytest.fixture
def openfam_root(request):
    path = tempfile.mkdtemp(prefix="fampool-openfam-root-")
    os.makedirs(os.path.join(path, "config"))
    request.addfinalizer(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


def write_openfam_config(root, base, memory_server_extra=""):
    """OpenFAM's four files for a CIS on BASE, memory server 0 (volatile) on BASE+1 and
    memory server 1 (persistent) on BASE+2, fabric ports BASE+100 and BASE+101."""
    config = os.path.join(root, "config")
    write(os.path.join(config, "fam_pe_config.yaml"), f"""\
# PE config file

# Fam thread model: default is single-threaded(single). Other option is multi-threaded(multiple)
FamThreadModel: single

# Libfabric provider to be used by OpenFAM libfabric datapath operations
provider: tcp

# OpenFAM model to be used; default is memory_server, Other option is shared_memory.
openfam_model: memory_server

# Runtime option used for OpenFAM; default is  PMIX. Other options is PMI2
runtime: PMIX

# Client Interace Type for OpenFAM; default is direct. Other option is rpc
client_interface_type: rpc

# Client interface service address and port
fam_client_interface_service_address: 127.0.0.1:{base}

# default memory type (volatile or persistent)
default_memory_type: volatile

# Resource release
resource_release: enable

rpc_framework_type: grpc
""")
    write(os.path.join(config, "fam_client_interface_config.yaml"), f"""\
# Client Interface Service config file
memsrv_interface_type: rpc
metadata_interface_type: direct

# Rpc address used by the Client Interface Service
rpc_interface: 127.0.0.1:{base}

# List of memory servers: id:address:port
memsrv_list:
  - 0:127.0.0.1:{base + 1}
  - 1:127.0.0.1:{base + 2}

# List of metadata servers: id:address:port
metadata_list:
  - 0:127.0.0.1:{base + 50}

provider: tcp
rpc_framework_type: grpc
""")
    write(os.path.join(config, "fam_memoryserver_config.yaml"), f"""\
# MemoryServer Config file
# Libfabric provider to be used by OpenFAM libfabric datapath operations; default is sockets.
provider: tcp

# Number of threads used for delayed free.
delayed_free_threads: 1

# Atomic library threads count - default (0) indicates ATL disabled
ATL_threads: 0

# ATL queue size - Number of elements in each queue
ATL_queue_size: 1000

# ATL data size per thread(MiB)
ATL_data_size: 1024

# This option is to enable or disable resource relinquishment in FAM
resource_release: enable

# Path where data item backups are stored
fam_backup_path: {root}/backup

rpc_framework_type: grpc
{memory_server_extra}
Memservers:
  0:
    memory_type: volatile
    fam_path: {root}/vol0
    rpc_interface: 127.0.0.1:{base + 1}
    libfabric_port: {base + 100}
    if_device: lo
  1:
    memory_type: persistent
    fam_path: {root}/pmem1
    rpc_interface: 127.0.0.1:{base + 2}
    libfabric_port: {base + 101}
""")
    write(os.path.join(config, "fam_metadata_config.yaml"), f"""\
# Metadata Service config file
metadata_manager: radixtree

# Path where metadata is stored
metadata_path: {root}/fam_metadata

# Enable region spanning
enable_region_spanning: true

# Size of region spanning each memory server
region_span_size_per_memoryserver: 1073741824

# Interleave size of data items
dataitem_interleave_size: 1048576
""")
    return config


def region_servers(run_dir, region):
    """The memory server ids `fampool stat REGION` names."""
    stat = fampool("stat", region, "--run-dir", run_dir)
    assert stat.returncode == 0, stat.stderr
    line = next(l for l in stat.stdout.splitlines() if "memory servers:" in l)
    return [int(part.split()[0]) for part in line.split(":", 1)[1].split(",")]


def create_region(run_dir, name, persistent):
    """Creates region NAME (volatile or persistent) through the C API in a child process."""
    memory_type = 2 if persistent else 1  # Fam_Memory_Type: VOLATILE 1, PERSISTENT 2
    run_c_api(run_dir, f"""
attributes = (ctypes.c_int * 4)(0, {memory_type}, 0, 0)
assert lib.c_fam_create_region(fam, {name!r}.encode(), 1 << 20, 0o700, attributes)
""")


def test_services_and_pes_start_from_openfams_files(run_dir, openfam_root):
    base = free_base_port(servers=2)
    config = write_openfam_config(openfam_root, base)
    up = fampool("up", "--config", config, "--run-dir", run_dir)
    assert up.returncode == 0, f"fampool up failed:\n{up.stdout}\n{up.stderr}"
    assert f"127.0.0.1:{base}" in up.stdout

    # Two PEs under mpirun, configured by $OPENFAM_ROOT/config/fam_pe_config.yaml alone.
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("FAMPOOL_") and k != "OPENFAM_ROOT"}
    env["OPENFAM_ROOT"] = openfam_root
    argv = ["mpirun", "-n", "2", "--oversubscribe", "-x", "OPENFAM_ROOT"]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    run = subprocess.run(argv + [WORKER, "openfam"], capture_output=True, text=True,
                         timeout=300, env=env, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAIL" not in run.stdout, run.stdout
    assert run.stdout.count("PASS finalize_twice") == 2, run.stdout

    # memory_type is honoured: volatile regions on server 0, persistent ones on server 1.
    create_region(run_dir, "vol", persistent=False)
    create_region(run_dir, "pers", persistent=True)
    assert region_servers(run_dir, "vol") == [0]
    assert region_servers(run_dir, "pers") == [1]
    # The CLI, given only OPENFAM_ROOT, looks at the cluster the PEs reached: every command.
    listed = fampool("ls", env=env)
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"\n  pers\s", listed.stdout) and "embedded model" not in listed.stdout, \
        listed.stdout
    make_region_with_item(run_dir, "cli", "x", 1 << 20, 4096)
    for argv in (["status"], ["stat", "cli", "x"], ["backup", "cli", "x", "openfam-root-bk"],
                 ["backup", "--list"], ["restore", "openfam-root-bk", "cli", "y"],
                 ["backup", "--delete", "openfam-root-bk"], ["rm", "cli", "y"],
                 ["bench", "--seconds", "0.01", "--item-size", "1MiB"], ["rm", "-r", "cli"]):
        done = fampool(*argv, env=env)
        assert done.returncode == 0, (argv, done.stdout + done.stderr)
        assert "Is a directory" not in done.stderr and "embedded" not in done.stdout, \
            (argv, done.stdout + done.stderr)


@pytest.mark.parametrize("line, key", [
    ("rpc_framework_type: thallium", "rpc_framework_type"),
    ("resource_release: disable", "resource_release"),
    ("ATL_threads: 4", "ATL_threads"),
    ("fam_paht: /tmp/x", "fam_paht"),
])
def test_up_refuses_an_openfam_value_fampool_does_not_take(run_dir, openfam_root, line, key):
    base = free_base_port(servers=2)
    config = write_openfam_config(openfam_root, base)
    path = os.path.join(config, "fam_memoryserver_config.yaml")
    with open(path) as f:
        text = f.read()
    # Replace the key's line if the file has it, else add the line.
    lines = [l for l in text.splitlines() if not l.startswith(key + ":")]
    write(path, "\n".join([line] + lines) + "\n")
    up = fampool("up", "--config", config, "--run-dir", run_dir)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "fam_memoryserver_config.yaml" in up.stderr and key in up.stderr, up.stderr


def test_up_refuses_a_memsrv_list_entry_that_is_not_id_host_port(run_dir, openfam_root):
    base = free_base_port(servers=2)
    config = write_openfam_config(openfam_root, base)
    path = os.path.join(config, "fam_client_interface_config.yaml")
    with open(path) as f:
        text = f.read()
    # "0: host:port" (a space after the id) is a map in YAML, not the string OpenFAM wants.
    write(path, text.replace(f"  - 0:127.0.0.1:{base + 1}", f"  - 0: 127.0.0.1:{base + 1}"))
    up = fampool("up", "--config", config, "--run-dir", run_dir)
    assert up.returncode == 1, up.stdout + up.stderr
    assert "fam_client_interface_config.yaml" in up.stderr and "memsrv_list" in up.stderr, \
        up.stderr
    assert "id:host:port" in up.stderr, up.stderr

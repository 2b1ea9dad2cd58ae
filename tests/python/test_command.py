"""The `mnem` command the wheel installs: the Rust command line run in-process by the
extension, with the binary's exit statuses and messages."""

import shutil
import subprocess
import sys


def test_the_command_is_the_wheels_entry_point_and_answers_its_version():
    assert shutil.which("mnem"), "the wheel puts `mnem` on PATH"
    done = subprocess.run(["mnem", "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    assert done.stdout.startswith("mnem ")


def test_bad_input_exits_2_naming_the_flag_and_writes_nothing(tmp_path):
    db = tmp_path / "x.db"
    done = subprocess.run(
        ["mnem", "--db", str(db), "recall", "anything", "--limit", "0"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2
    assert "limit" in done.stderr


def test_python_dash_m_runs_the_same_command(tmp_path):
    db = str(tmp_path / "m.db")
    base = [sys.executable, "-m", "mnem", "--db", db, "--embedder", "none"]
    subprocess.run(base + ["remember", "The backup runs at 02:00"], check=True)
    done = subprocess.run(base + ["--json", "recall", "when does the backup run"],
                          capture_output=True, text=True, check=True)
    assert "The backup runs at 02:00" in done.stdout

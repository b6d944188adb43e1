"""The fleet benchmark's configuration and readings (the benchmark itself starts real
replicas and a router, so it runs by hand: `python -m benchmarks affinity`)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks.affinity import Fleet, header_variable, nginx_config, replica_command


def test_nginx_hashes_on_the_session_header_or_rotates_without_one(tmp_path: Path) -> None:
    hashed = nginx_config(18300, [18301, 18302], tmp_path, header="X-Session-ID")
    assert "    hash $http_x_session_id consistent;\n" in hashed
    assert "server 127.0.0.1:18301;" in hashed
    assert "server 127.0.0.1:18302;" in hashed
    assert "listen 127.0.0.1:18300;" in hashed
    rotated = nginx_config(18300, [18301, 18302], tmp_path, header=None)
    assert "hash " not in rotated
    assert "log_format affinity '$http_x_session_id $upstream_addr';" in rotated
    assert header_variable("x-grok-conv-id") == "$http_x_grok_conv_id"
    with pytest.raises(ValueError, match="at least one replica"):
        nginx_config(18300, [], tmp_path, header=None)


@pytest.mark.skipif(
    shutil.which("nginx") is None and not Path("/usr/sbin/nginx").is_file(),
    reason="nginx is not installed (apt-get install nginx-light)",
)
def test_nginx_accepts_the_config(tmp_path: Path) -> None:
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    conf = tmp_path / "nginx.conf"
    conf.write_text(nginx_config(18300, [18301, 18302], tmp_path, header="X-Session-ID"))
    checked = subprocess.run(
        [nginx, "-t", "-c", str(conf), "-p", str(tmp_path), "-e", str(tmp_path / "e.log")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr


def test_replicas_run_one_thread_each_with_the_prompt_cache_on(tmp_path: Path) -> None:
    command = replica_command(tmp_path / "model.gguf", 18301)
    pairs = dict(zip(command[3::2], command[4::2], strict=False))
    assert pairs["--cache"] == "true"
    assert pairs["--n_threads"] == pairs["--n_threads_batch"] == "1"
    assert pairs["--host"] == "127.0.0.1"
    assert pairs["--verbose"] == "true"  # the prefix-match lines are the reuse figures


def test_reuse_and_spread_are_read_from_the_replicas_and_the_router(tmp_path: Path) -> None:
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    logs[0].write_text(
        "Llama.generate: 120 prefix-match hit, remaining 30 prompt tokens to eval\n"
        "Llama._create_completion: cache hit\n"
        "Llama.generate: 150 prefix-match hit, remaining 31 prompt tokens to eval\n"
        "llama_perf_context_print: prompt eval time =    4136.14 ms /    31 tokens (  94.00 ms"
        " per token,    10.64 tokens per second)\n"
        "llama_perf_context_print:        eval time =     294.17 ms /     3 runs   (  98.06 ms"
        " per token,    10.20 tokens per second)\n"
    )
    logs[1].write_text("Llama._create_completion: cache miss\n")
    access = tmp_path / "access.log"
    access.write_text("s1 127.0.0.1:1\ns1 127.0.0.1:1\ns2 127.0.0.1:1\ns2 127.0.0.1:2\n")
    fleet = Fleet("http://127.0.0.1:1/v1", logs, access)
    assert fleet.reused() == 270
    tokens, seconds = fleet.prompt_eval()
    assert (tokens, round(seconds, 5)) == (31, 4.13614)
    assert fleet.replicas_per_session() == 1.5

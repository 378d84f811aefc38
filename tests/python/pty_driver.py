"""Runs a command with its stdin on a fresh pseudo-terminal, typing lines as it asks.

    python3 pty_driver.py WATCH PROMPT SCRIPT CMD...

WATCH is `stdout` or `stderr`: the stream on which CMD asks, by printing PROMPT.
SCRIPT is JSON, `[[N, LINE], ...]`: each LINE is typed once CMD has printed PROMPT N
times on WATCH (at once for N = 0), or once it has exited. CMD's stdout and stderr are
passed on whole, after it exits; its exit code is the driver's. The functional tests
(tests/functional/common/mod.rs, `on_a_terminal`) run agentest under it to answer its
questions as a person at a terminal would.
"""

import json
import os
import pty
import subprocess
import sys
import threading
import time

# How long the command may take in all, prompts and answers included.
LIMIT = 60

watch, prompt, script = sys.argv[1], sys.argv[2].encode(), json.loads(sys.argv[3])
master, slave = pty.openpty()
p = subprocess.Popen(sys.argv[4:], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
os.close(slave)
out = {"stdout": bytearray(), "stderr": bytearray()}


def pump(stream, into):
    while True:
        b = stream.read1(4096)
        if not b:
            break
        into.extend(b)


def drain():
    # The terminal echoes what is typed; read it so that its buffer never fills.
    while True:
        try:
            if not os.read(master, 4096):
                break
        except OSError:
            break


pumps = [
    threading.Thread(target=pump, args=(p.stdout, out["stdout"])),
    threading.Thread(target=pump, args=(p.stderr, out["stderr"])),
]
for t in pumps:
    t.start()
threading.Thread(target=drain, daemon=True).start()
deadline = time.time() + LIMIT
for count, line in script:
    while out[watch].count(prompt) < count and p.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    os.write(master, (line + "\n").encode())
try:
    p.wait(timeout=max(deadline - time.time(), 1))
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
for t in pumps:
    t.join()
sys.stdout.buffer.write(bytes(out["stdout"]))
sys.stderr.buffer.write(bytes(out["stderr"]))
sys.exit(p.returncode)

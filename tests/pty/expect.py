"""Run a command in a pseudo-terminal and answer its prompts, like expect(1).

Usage: expect.py STEPS_JSON CMD [ARGS...]

STEPS_JSON is a list of [wait_for, send]: read the terminal until the text
`wait_for` has appeared (after everything matched before), then type
`send`. After the last step, read until the command exits. Prints one JSON
object: {"status": exit code, "transcript": everything the terminal showed}.
Standard library only (pty, os, select), so any Python 3 runs it.
"""

import json
import os
import pty
import select
import sys
import time

steps = json.loads(sys.argv[1])
argv = sys.argv[2:]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)

seen = b""
deadline_each = 30.0


def read_some(timeout):
    global seen
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return False
    try:
        chunk = os.read(fd, 65536)
    except OSError:
        return None
    if not chunk:
        return None
    seen += chunk
    return True


pos = 0
for wait_for, send in steps:
    want = wait_for.encode()
    start = time.time()
    while want not in seen[pos:]:
        if time.time() - start > deadline_each:
            print(json.dumps({"status": None, "error": f"timed out waiting for {wait_for!r}",
                              "transcript": seen.decode(errors="replace")}))
            sys.exit(1)
        if read_some(0.5) is None:
            print(json.dumps({"status": None, "error": f"ended before {wait_for!r}",
                              "transcript": seen.decode(errors="replace")}))
            sys.exit(1)
    pos = seen.index(want, pos) + len(want)
    os.write(fd, send.encode())

start = time.time()
while time.time() - start < deadline_each:
    if read_some(0.5) is None:
        break
_, status = os.waitpid(pid, 0)
print(json.dumps({"status": os.waitstatus_to_exitcode(status),
                  "transcript": seen.decode(errors="replace")}))

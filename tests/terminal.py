"""A command with its standard output a pseudo-terminal of a given width (TIOCSWINSZ), for the
tests of what lantern writes to a terminal: output fitted to its width (tests/kernels), control
characters escaped (tests/cli). No $COLUMNS: the terminal's own width counts."""
import fcntl
import os
import pty
import struct
import subprocess
import termios


def run_in_terminal(command, columns, env=None):
    """Runs command (a list) to its end: (stdout bytes, stderr text, exit status)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.OPOST  # no "\n" -> "\r\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    base = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    p = subprocess.Popen(command, stdout=slave, stderr=subprocess.PIPE, env={**base, **(env or {})})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    stderr = p.stderr.read().decode()
    p.stderr.close()
    return b"".join(chunks), stderr, p.wait(timeout=60)

// envd's PTYs (sandbox.pty in the SDKs), on the sandbox's ordinary background processes: the process
// is a small Python program in the sandbox that opens a pseudo-terminal (the sandbox has its own
// devpts), runs the command on it, copies the terminal's output to its stdout, and reads its stdin
// as frames: keystrokes for the terminal, or a new window size. So input, resizes, signals, exit
// codes, listing and reconnecting are those of background processes; only which pids are PTYs is
// kept here, per sandbox, to tell the SDK their output is the terminal's.
import { invalid } from "../errors.js";

/** Frame kinds on the helper's stdin: one byte, then a 32-bit big-endian length, then the payload. */
const DATA = 0;
const RESIZE = 1;

/** The helper (python3 -c): argv is rows, cols, then the command and its arguments. */
export const PTY_HELPER = `
import fcntl, os, pty, select, signal, struct, sys, termios
rows, cols, argv = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
pid, master = pty.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
def size(r, c):
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", r, c, 0, 0))
    os.kill(pid, signal.SIGWINCH)
def write_all(fd, data):
    while data:
        data = data[os.write(fd, data):]
size(rows, cols)
def forward(n, _frame):
    try:
        os.kill(pid, n)
    except OSError:
        pass
for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
    signal.signal(s, forward)
stdin, stdout, pending, fds = 0, 1, b"", [master, 0]
while True:
    try:
        ready = select.select(fds, [], [])[0]
    except InterruptedError:
        continue
    if master in ready:
        try:
            out = os.read(master, 65536)
        except OSError:
            out = b""
        if not out:
            break
        write_all(stdout, out)
    if stdin in ready:
        got = os.read(stdin, 65536)
        if not got:
            fds.remove(stdin)
            continue
        pending += got
        while len(pending) >= 5:
            kind, n = pending[0], int.from_bytes(pending[1:5], "big")
            if len(pending) < 5 + n:
                break
            body, pending = pending[5:5 + n], pending[5 + n:]
            if kind == ${DATA}:
                write_all(master, body)
            elif kind == ${RESIZE} and n == 4:
                size(*struct.unpack(">HH", body))
status = os.waitpid(pid, 0)[1]
code = os.waitstatus_to_exitcode(status)
sys.exit(128 - code if code < 0 else code)
`;

function frame(kind: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(5);
  head.writeUInt8(kind, 0);
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

/** Keystrokes for the terminal. */
export const ptyInput = (data: Buffer): Buffer => frame(DATA, data);

/** A new window size. */
export function ptyResize(rows: number, cols: number): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt16BE(rows, 0);
  size.writeUInt16BE(cols, 2);
  return frame(RESIZE, size);
}

/** A terminal size from a message's `pty.size`, checked (terminals are 1..65535 each way). */
export function ptySize(pty: unknown): { rows: number; cols: number } {
  const size = (pty as { size?: { rows?: unknown; cols?: unknown } } | null | undefined)?.size;
  const ok = (n: unknown): n is number => typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 65535;
  if (!ok(size?.rows) || !ok(size?.cols)) throw invalid("'pty.size' needs 'rows' and 'cols', each 1..65535");
  return { rows: size.rows, cols: size.cols };
}

/** The command line that runs `cmd args` on a terminal of that size. */
export function ptyCommand(cmd: string, args: string[], size: { rows: number; cols: number }): { command: string; args: string[] } {
  return { command: "exec python3", args: ["-c", PTY_HELPER, String(size.rows), String(size.cols), cmd, ...args] };
}

export interface PtyCommand {
  cmd: string;
  args: string[];
}

/**
 * Which processes of each sandbox are PTYs, and the command each runs on its terminal (the
 * process itself is the helper). Forgotten with the sandbox; pids are reused, so bounded.
 */
export class PtyPids {
  private readonly bySandbox = new Map<string, Map<number, PtyCommand>>();

  constructor(private readonly maxPerSandbox: number) {}

  add(sandboxId: string, pid: number, command: PtyCommand): void {
    let map = this.bySandbox.get(sandboxId);
    if (!map) {
      map = new Map();
      this.bySandbox.set(sandboxId, map);
    }
    map.delete(pid);
    if (map.size >= this.maxPerSandbox) map.delete(map.keys().next().value as number);
    map.set(pid, command);
  }

  get(sandboxId: string, pid: number): PtyCommand | undefined {
    return this.bySandbox.get(sandboxId)?.get(pid);
  }

  /** A pid that is not a PTY's any more (its number now names another process). */
  delete(sandboxId: string, pid: number): void {
    this.bySandbox.get(sandboxId)?.delete(pid);
  }

  drop(sandboxId: string): void {
    this.bySandbox.delete(sandboxId);
  }
}

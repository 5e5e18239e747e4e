// The seccomp program, run by a small classic-BPF interpreter over seccomp_data for a few syscalls:
// what the kernel would decide, without loading the filter anywhere.
import assert from "node:assert/strict";
import { test } from "node:test";
import { buildSeccompFilter } from "../../src/sandbox/seccomp.js";

const RET_KILL_PROCESS = 0x80000000;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EPERM = RET_ERRNO | 1;
const ENOSYS = RET_ERRNO | 38;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const AUDIT_ARCH_I386 = 0x40000003;
/** The kernel's BPF_MAXINSNS. */
const MAX_INSNS = 4096;

interface Call {
  nr: number;
  arch?: number;
  args?: number[];
}

/** struct seccomp_data: nr, arch, instruction_pointer (u64), args[6] (u64), little endian. */
function seccompData(call: Call): Buffer {
  const data = Buffer.alloc(64);
  data.writeUInt32LE(call.nr >>> 0, 0);
  data.writeUInt32LE((call.arch ?? AUDIT_ARCH_X86_64) >>> 0, 4);
  for (const [i, a] of (call.args ?? []).entries()) data.writeBigUInt64LE(BigInt(a), 16 + i * 8);
  return data;
}

/** Runs the program the way the kernel does; only the instructions seccomp allows are known. */
function run(prog: Buffer, call: Call): number {
  const data = seccompData(call);
  const n = prog.length / 8;
  let acc = 0;
  for (let pc = 0, steps = 0; steps < MAX_INSNS; steps++) {
    assert.ok(pc < n, `pc ${pc} ran off the end of the program`);
    const code = prog.readUInt16LE(pc * 8);
    const jt = prog.readUInt8(pc * 8 + 2);
    const jf = prog.readUInt8(pc * 8 + 3);
    const k = prog.readUInt32LE(pc * 8 + 4);
    switch (code) {
      case 0x20: // BPF_LD | BPF_W | BPF_ABS
        assert.ok(k % 4 === 0 && k + 4 <= data.length, `misaligned load at ${k}`);
        acc = data.readUInt32LE(k);
        pc += 1;
        break;
      case 0x15: // BPF_JMP | BPF_JEQ | BPF_K
        pc += 1 + (acc === k ? jt : jf);
        break;
      case 0x45: // BPF_JMP | BPF_JSET | BPF_K
        pc += 1 + ((acc & k) >>> 0 !== 0 ? jt : jf);
        break;
      case 0x06: // BPF_RET | BPF_K
        return k;
      default:
        assert.fail(`unexpected BPF opcode 0x${code.toString(16)} at ${pc}`);
    }
  }
  assert.fail("the program did not return");
}

const prog = buildSeccompFilter();

test("a well-formed program: whole instructions, within the kernel's size limit, ends in a return", () => {
  assert.equal(prog.length % 8, 0);
  assert.ok(prog.length / 8 > 10 && prog.length / 8 <= MAX_INSNS);
  assert.equal(prog.readUInt16LE(prog.length - 8), 0x06, "last instruction is a return");
});

test("namespace, mount, tracing, kernel-facing syscalls are refused with EPERM", () => {
  const denied = {
    ptrace: 101,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    chroot: 161,
    unshare: 272,
    setns: 308,
    keyctl: 250,
    bpf: 321,
    perf_event_open: 298,
    userfaultfd: 323,
    init_module: 175,
    finit_module: 313,
    kexec_load: 246,
    reboot: 169,
    open_by_handle_at: 304,
    io_uring_setup: 425,
    fsopen: 430,
    move_mount: 429,
    process_vm_readv: 310,
    pidfd_getfd: 438,
  };
  for (const [name, nr] of Object.entries(denied)) assert.equal(run(prog, { nr }), EPERM, name);
});

test("ordinary syscalls are allowed", () => {
  const allowed = { read: 0, write: 1, close: 3, mmap: 9, getpid: 39, execve: 59, wait4: 61, kill: 62, openat: 257, exit_group: 231 };
  for (const [name, nr] of Object.entries(allowed)) assert.equal(run(prog, { nr }), RET_ALLOW, name);
});

test("clone: threads and forks pass, any new namespace is refused; clone3 (flags out of reach) is ENOSYS", () => {
  const CLONE_VM = 0x100;
  const CLONE_THREAD = 0x10000;
  const SIGCHLD = 17;
  assert.equal(run(prog, { nr: 56, args: [SIGCHLD] }), RET_ALLOW, "fork");
  assert.equal(run(prog, { nr: 56, args: [CLONE_VM | CLONE_THREAD | 0x3d0f00] }), RET_ALLOW, "pthread_create");
  for (const [name, flag] of Object.entries({
    NEWNS: 0x20000,
    NEWUSER: 0x10000000,
    NEWPID: 0x20000000,
    NEWNET: 0x40000000,
    NEWCGROUP: 0x2000000,
    NEWTIME: 0x80,
  })) {
    assert.equal(run(prog, { nr: 56, args: [SIGCHLD | flag] }), EPERM, `clone ${name}`);
  }
  assert.equal(run(prog, { nr: 435 }), ENOSYS, "clone3");
});

test("ioctl: terminal input injection is refused, other requests pass", () => {
  assert.equal(run(prog, { nr: 16, args: [0, 0x5412] }), EPERM, "TIOCSTI");
  assert.equal(run(prog, { nr: 16, args: [0, 0x541c] }), EPERM, "TIOCLINUX");
  assert.equal(run(prog, { nr: 16, args: [0, 0x5401] }), RET_ALLOW, "TCGETS");
});

test("another ABI is killed: i386, and x32 numbers on x86_64", () => {
  assert.equal(run(prog, { nr: 1, arch: AUDIT_ARCH_I386 }), RET_KILL_PROCESS);
  assert.equal(run(prog, { nr: 0x40000000 | 1 }), RET_KILL_PROCESS);
  assert.equal(run(prog, { nr: 0x40000000 | 272 }), RET_KILL_PROCESS);
});

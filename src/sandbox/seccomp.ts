// The seccomp filter every sandbox process runs under: a classic-BPF program (default allow) that
// refuses the syscalls a sandbox has no business making (namespaces, mounts, ptrace, kernel
// keyrings, bpf, io_uring, module loading, clock setting, ...). Handed to bubblewrap on a file
// descriptor. x86_64 only; any other ABI (i386, x32) is killed.

const SECCOMP_RET_KILL_PROCESS = 0x80000000;
const SECCOMP_RET_ERRNO = 0x00050000;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const EPERM = 1;
const ENOSYS = 38;
const AUDIT_ARCH_X86_64 = 0xc000003e;
const X32_SYSCALL_BIT = 0x40000000;

// BPF opcodes
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const JSET_K = 0x45;
const RET_K = 0x06;

/** x86_64 numbers of the refused syscalls. */
const DENIED: Record<string, number> = {
  ptrace: 101,
  process_vm_readv: 310,
  process_vm_writev: 311,
  mount: 165,
  umount2: 166,
  pivot_root: 155,
  chroot: 161,
  unshare: 272,
  setns: 308,
  keyctl: 250,
  add_key: 248,
  request_key: 249,
  bpf: 321,
  perf_event_open: 298,
  userfaultfd: 323,
  kexec_load: 246,
  kexec_file_load: 320,
  init_module: 175,
  finit_module: 313,
  delete_module: 176,
  reboot: 169,
  swapon: 167,
  swapoff: 168,
  acct: 163,
  quotactl: 179,
  open_by_handle_at: 304,
  name_to_handle_at: 303,
  iopl: 172,
  ioperm: 173,
  syslog: 103,
  fsopen: 430,
  fsmount: 432,
  fsconfig: 431,
  fspick: 433,
  open_tree: 428,
  move_mount: 429,
  mount_setattr: 442,
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  lookup_dcookie: 212,
  uselib: 134,
  vhangup: 153,
  settimeofday: 164,
  clock_settime: 227,
  adjtimex: 159,
  clock_adjtime: 305,
  kcmp: 312,
  sethostname: 170,
  setdomainname: 171,
  personality: 135,
  mbind: 237,
  migrate_pages: 256,
  move_pages: 279,
  set_mempolicy: 238,
  pidfd_getfd: 438,
};
const NR_CLONE = 56;
const NR_CLONE3 = 435;
const NR_IOCTL = 16;
/** CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME */
const CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080;
const TIOCSTI = 0x5412;
const TIOCLINUX = 0x541c;

// Offsets in struct seccomp_data (little endian: the low word of each 64-bit arg comes first).
const OFF_NR = 0;
const OFF_ARCH = 4;
const OFF_ARG0_LO = 16;
const OFF_ARG1_LO = 24;

type Insn = [code: number, jt: number | string, jf: number | string, k: number];

/** Builds the program; jump targets may name a label, resolved to relative offsets at the end. */
export function buildSeccompFilter(): Buffer {
  const prog: Insn[] = [
    [LD_W_ABS, 0, 0, OFF_ARCH],
    [JEQ_K, 1, 0, AUDIT_ARCH_X86_64],
    [RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS],
    [LD_W_ABS, 0, 0, OFF_NR],
    [JSET_K, "kill", 0, X32_SYSCALL_BIT],
    ...Object.values(DENIED).map((nr): Insn => [JEQ_K, "eperm", 0, nr]),
    [JEQ_K, "enosys", 0, NR_CLONE3],
    [JEQ_K, "clone", 0, NR_CLONE],
    [JEQ_K, "ioctl", 0, NR_IOCTL],
    [RET_K, 0, 0, SECCOMP_RET_ALLOW],
  ];
  const labels: Record<string, number> = {};
  const add = (label: string, ...insns: Insn[]) => {
    labels[label] = prog.length;
    prog.push(...insns);
  };
  add("clone", [LD_W_ABS, 0, 0, OFF_ARG0_LO], [JSET_K, "eperm", 0, CLONE_NS_FLAGS], [RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  add(
    "ioctl",
    [LD_W_ABS, 0, 0, OFF_ARG1_LO],
    [JEQ_K, "eperm", 0, TIOCSTI],
    [JEQ_K, "eperm", 0, TIOCLINUX],
    [RET_K, 0, 0, SECCOMP_RET_ALLOW],
  );
  add("eperm", [RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  add("enosys", [RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS]);
  add("kill", [RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS]);

  const out = Buffer.alloc(prog.length * 8);
  prog.forEach(([code, jt, jf, k], i) => {
    const target = (j: number | string) => {
      if (typeof j === "number") return j;
      const offset = (labels[j] as number) - i - 1;
      if (offset < 0 || offset > 255) throw new Error(`seccomp jump to ${j} out of range`);
      return offset;
    };
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(target(jt), i * 8 + 2);
    out.writeUInt8(target(jf), i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

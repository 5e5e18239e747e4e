// Lowers the priority of the calling worker thread (on Linux the nice value is per thread, and
// threads it starts inherit it), for threads doing background work of the vectors area: a bulk
// load's parse and commit then take the CPU the searches leave, not the other way round.
import os from "node:os";

/** Nice value of the vectors area's background threads (the writer, the body parser, the loader). */
const BACKGROUND_NICE = 5;

export function backgroundThread(): void {
  try {
    // Without a pid: the calling thread only (Linux); raising the nice value needs no privilege.
    os.setPriority(Math.max(os.getPriority(), BACKGROUND_NICE));
  } catch {
    // not permitted here: runs at the normal priority
  }
}

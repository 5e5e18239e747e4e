# The in-sandbox supervisor (entry point: ../supervisor.py). One module per job:
#   state     shared tables: selector, children, kernels, jobs, the base environment
#   protocol  frames on the link to the service: send, LinkReader
#   procs     spawn and signal the processes the supervisor owns
#   streams   Stream (a child's output pipe) and Job (what runs and commands share)
#   kernels   Kernel, Run, the python kernel (forked) and the bash driver
#   display   rich results of the python kernel (last expression, display(), figures)
#   datastack matplotlib's environment and the pre-imported python kernel of an idle sandbox
#   commands  Command (op "exec")
#   files     file operations (op "file") and path resolution
#   stats     network and disk counters (op "stats")
#   pidcap    the process cap: noticing it is reached and reclaiming slots
#   main      handle, reap, deadlines, the main loop
# Everything a forked python kernel uses is imported before the first fork (a later import would
# read files and show up as sandbox disk I/O).

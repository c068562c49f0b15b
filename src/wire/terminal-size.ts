/** Largest `cols` / `rows` a terminal may ask for; the host checks it before dialing, the agent again. */
export const MAX_TERMINAL_DIMENSION = 1000

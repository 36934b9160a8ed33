import baseConfig from '../../eslint.config.mjs';
import { deterministicLibrary } from '../../tools/lint/deterministic-library.mjs';

/** Fleets are data: built in memory, deterministically, with no I/O, no clock and no ambient randomness. */
export default [...baseConfig, deterministicLibrary('A fleet builder')];

import baseConfig from '../../eslint.config.mjs';
import { deterministicLibrary } from '../../tools/lint/deterministic-library.mjs';

/** The engine is a pure library: no I/O, no framework, no clock, no randomness. */
export default [...baseConfig, deterministicLibrary('The engine')];

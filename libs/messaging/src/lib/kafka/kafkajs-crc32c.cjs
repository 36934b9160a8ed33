// What the bundles give kafkajs for its `recordBatch/crc32C/crc32C.js` (tools/build/bundle-cli.mjs):
// a function of a buffer to its CRC-32C, as that module exports.
module.exports = require('./crc32c').crc32c;

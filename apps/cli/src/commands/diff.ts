import { readFile } from 'node:fs/promises';
import { EXIT_OK, FleetValidationError, InputError, describeFsError } from '../errors';
import { PipelineApi, RequestRefused } from '../io/pipeline-api';
import type { ChangePreview, NodeBundleDiff } from '../io/pipeline-api';
import { writeLine } from '../io/streams';
import type { CommandDefinition } from './context';
import type { PipelineCommandOptions } from './pipeline-options';
import { pipelineOptions } from './pipeline-options';

/** Node ids listed in the summary; the others are counted. */
const LISTED_NODES = 20;

async function readChangeSet(file: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new InputError(`cannot read change-set file ${file}: ${describeFsError(error)}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new InputError(`${file}: not valid JSON: ${(error as Error).message}`);
  }
}

function listed(ids: readonly string[], count = ids.length): string {
  if (count === 0) return 'none';
  const shown = ids.slice(0, LISTED_NODES).join(', ');
  return count > LISTED_NODES
    ? `${count} nodes: ${shown}, … ${count - LISTED_NODES} more`
    : `${count} node(s): ${shown}`;
}

function countsLine(counts: ChangePreview['counts']): string {
  const parts = Object.entries(counts).map(([kind, { upserted, deleted }]) =>
    [upserted > 0 ? `${upserted} ${kind} upserted` : '', deleted > 0 ? `${deleted} ${kind} deleted` : '']
      .filter(Boolean)
      .join(', '),
  );
  return parts.length === 0 ? 'nothing' : parts.join(', ');
}

function nodeLines(diff: NodeBundleDiff): string[] {
  const { added, removed, changed } = diff.files;
  const lines = [
    '',
    `=== ${diff.node} (${diff.status.before} → ${diff.status.after}): ${added.length} added, ${removed.length} removed, ${changed.length} changed`,
    ...added.map((path) => `  added    ${path}`),
    ...removed.map((path) => `  removed  ${path}`),
    ...changed.map((path) => `  changed  ${path}`),
  ];
  for (const text of Object.values(diff.diffs)) lines.push(text.trimEnd());
  if (diff.undiffed.length > 0) lines.push(`  (no diff shown for ${diff.undiffed.join(', ')}: too large)`);
  return lines;
}

/** The preview as a person reads it: what the change touches, the nodes it reaches and fails, then the diffs. */
export function renderPreview(preview: ChangePreview): string[] {
  const lines = [
    `dry run against revision ${preview.revision}: nothing committed`,
    `change      ${countsLine(preview.counts)}`,
    `affected    ${listed(preview.affected.nodes, preview.affected.count)}`,
    `removed     ${listed(preview.removed)}`,
    `changed     ${preview.changed} of ${preview.checked.count} node(s) generated${
      preview.checked.leftOut > 0 ? ` (${preview.checked.leftOut} affected node(s) not generated)` : ''
    }`,
    `failing     ${preview.failing.length === 0 ? 'no node' : `${preview.failing.length} node(s)`}`,
  ];
  for (const failing of preview.failing)
    for (const error of failing.errors)
      lines.push(
        `  ${failing.node}  ${error.code}  (was ${failing.before}): ${error.message.split('\n')[0] ?? ''}`,
      );
  for (const diff of preview.nodes) lines.push(...nodeLines(diff));
  if (preview.diffsLeftOut > 0) lines.push('', `… ${preview.diffsLeftOut} more changed node(s) not diffed`);
  return lines;
}

export const defineDiff: CommandDefinition = (program, { streams, exitWith }) => {
  const command = program
    .command('diff')
    .description(
      'preview a change set against a running pipeline, committing nothing: the nodes it affects, those that would fail and why, and their bundle diffs',
    )
    .argument('<change-set>', 'a change set as a JSON file (fleet-format.md, "Change sets")');
  for (const option of pipelineOptions()) command.addOption(option);
  command.action(async (file: string, options: PipelineCommandOptions) => {
    const changeSet = await readChangeSet(file);
    const api = new PipelineApi(options.url, options.token);
    let preview: ChangePreview;
    try {
      preview = await api.previewChange(changeSet);
    } catch (error) {
      if (error instanceof RequestRefused) throw new FleetValidationError(file, error.issues, 'change set');
      throw error;
    }
    if (options.json) writeLine(streams.stdout, JSON.stringify(preview, null, 2));
    else for (const line of renderPreview(preview)) writeLine(streams.stdout, line);
    exitWith(EXIT_OK);
  });
};

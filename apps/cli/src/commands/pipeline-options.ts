import { Option } from 'commander';

/** `--url` and `--token` of the commands that read a running pipeline. */
export function pipelineOptions(): Option[] {
  return [
    new Option(
      '--url <url>',
      'the config API of the pipeline (npm start: http://127.0.0.1:3000)',
    ).makeOptionMandatory(),
    new Option('--token <token>', 'a bearer credential, when the API asks for one').env('POLICYGEN_TOKEN'),
    new Option('--json', 'print the answer as JSON'),
  ];
}

export interface PipelineCommandOptions {
  readonly url: string;
  readonly token?: string;
  readonly json?: boolean;
}

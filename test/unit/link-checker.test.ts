// The link checker of readme.test.ts (test/unit/markdown.ts), on pages made up here.
import { describe, expect, it } from '@jest/globals';
import { anchorsOf, brokenLinks, type Files } from './markdown.js';

describe('the link checker', () => {
  const made: Record<string, string> = {
    'docs/a.md': [
      '# Page A',
      '',
      '## Set-up & `npm ci`',
      '## Coming from @nestjs/bullmq',
      '## Notes',
      '## Notes',
      '',
      '```ts',
      '// [not a link](nowhere.md) inside code',
      '```',
      '',
      'See [setup](#set-up--npm-ci), [bullmq](#coming-from-nestjsbullmq), [2nd](#notes-1),',
      '[B](b.md#details), [root](../README.md), [folder](sub), `[code](gone.md)` and',
      '[web](https://example.com/x.md#nope).',
    ].join('\n'),
    'docs/b.md': '# B\n\n## Details\n',
    'docs/sub': '',
    'README.md': '# Readme\n',
  };
  const files: Files = {
    exists: (path) => path in made,
    read: (path) => made[path] ?? '',
  };

  it('computes GitHub anchors: punctuation dropped, spaces to hyphens, repeats numbered', () => {
    expect([...anchorsOf(made['docs/a.md']!)]).toEqual([
      'page-a',
      'set-up--npm-ci',
      'coming-from-nestjsbullmq',
      'notes',
      'notes-1',
    ]);
  });

  it('passes a page whose every link leads somewhere', () => {
    expect(brokenLinks('docs/a.md', made['docs/a.md']!, files)).toEqual([]);
  });

  it('reports a missing file, a missing anchor, and a path out of the repository', () => {
    const page = [
      '# Broken',
      '[gone](gone.md) [bad anchor](b.md#nothing) [here](#broken) [self](#nope)',
      '![img](pic.png) [out](../../etc/passwd)',
    ].join('\n');
    expect(brokenLinks('docs/c.md', page, files)).toEqual([
      'docs/c.md:2: gone.md (no such file)',
      'docs/c.md:2: b.md#nothing (no heading #nothing in docs/b.md)',
      'docs/c.md:2: #nope (no heading #nope in docs/c.md)',
      'docs/c.md:3: pic.png (no such file)',
      'docs/c.md:3: ../../etc/passwd (no such file)',
    ]);
  });
});

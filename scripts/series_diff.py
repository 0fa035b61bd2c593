# SPDX-License-Identifier: GPL-2.0
"""What the series added, from a unified diff of the prepared tree.

A finding counts against the series when it points at a line the series
added, or anywhere in a file the series created; the kernel's own findings
in files we only hook into are left alone.
"""

import re
import subprocess


class SeriesDiff:
    """Lines added per file, and the files created, by pristine..asi."""

    def __init__(self, tree, rev='pristine..asi'):
        text = subprocess.run(['git', '-C', tree, 'diff', '-U0', rev], check=True,
                              capture_output=True, text=True).stdout
        self.added, self.created = {}, set()
        cur, created = None, False
        for line in text.splitlines():
            if line.startswith('--- '):
                created = line.startswith('--- /dev/null')
            elif line.startswith('+++ b/'):
                cur = line[6:].strip()
                self.added.setdefault(cur, set())
                if created:
                    self.created.add(cur)
            elif line.startswith('@@') and cur:
                m = re.search(r'\+(\d+)(?:,(\d+))?', line)
                start, count = int(m.group(1)), int(m.group(2) or 1)
                self.added[cur].update(range(start, start + count))

    def files(self):
        """Every file the series touches."""
        return sorted(self.added)

    def ours(self, path, line):
        """Whether the series wrote line @line of @path."""
        return path in self.created or line in self.added.get(path, ())

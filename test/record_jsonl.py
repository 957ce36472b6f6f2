# SPDX-License-Identifier: MIT
"""The records of a `kkctl record --format jsonl` file, for the record tests
(kkctl_record_flood.sh, kkctl_record_many.sh): PYTHONPATH=$KK_SRC/test."""
import json


class Records:
    """Iterates over the file's records (dicts); lines that do not parse are
    counted in .bad, and the first three are printed."""

    def __init__(self, path):
        self.path, self.bad = path, 0

    def __iter__(self):
        with open(self.path, 'rb') as f:
            for no, raw in enumerate(f, 1):
                try:
                    yield json.loads(raw.decode('utf-8'))
                except Exception as e:
                    self.bad += 1
                    if self.bad <= 3:
                        print("line %d does not parse (%s): %.120r" % (no, e, raw))

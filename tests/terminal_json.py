"""tests/terminal_json.py FILE NAME: FILE parses as JSON and some string in it
is NAME, byte for byte (tests/terminal.sh: a name with escape bytes kept
as data, \\u001b in the text)."""
import json
import sys


def strings(v):
    if isinstance(v, str):
        yield v
    elif isinstance(v, dict):
        for x in v.values():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)


with open(sys.argv[1], encoding="utf-8") as f:
    doc = json.load(f)
sys.exit(0 if sys.argv[2] in strings(doc) else 1)

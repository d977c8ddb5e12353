#!/usr/bin/env python3
"""The pack author's public surface: the items rustdoc lists for wop-sdk (target/doc/wop_sdk/all.html,
after `cargo doc -p wop-sdk --no-deps`): structs, enums, traits, fns, constants, macros, types.
Methods are not counted; `#[doc(hidden)]` items are not listed. Prints the count per module and
fails above the budget given (docs/CHANGELOG.md says why the budget is what it is)."""
import collections, re, sys

budget = int(sys.argv[1]) if len(sys.argv) > 1 else 125
text = open('target/doc/wop_sdk/all.html').read()
items = re.findall(r'<li><a href="([^"]+)">[^<]+</a></li>', text)
per = collections.Counter(h.split('/')[0] if '/' in h else '(root)' for h in items)
print(f"wop-sdk's public items: {len(items)} (budget {budget}): " +
      ', '.join(f'{m} {n}' for m, n in per.most_common()))
if not items:
    sys.exit('no item found in target/doc/wop_sdk/all.html: has rustdoc changed its format?')
if len(items) > budget:
    sys.exit(f'wop-sdk has {len(items)} public items, above its budget of {budget}: keep host-side '
             'and test-side items out of the pack crate, or raise the budget in .ci/run and say why '
             'in docs/CHANGELOG.md')

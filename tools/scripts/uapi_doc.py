#!/usr/bin/env python3
"""Generates the tables of docs/uapi.md from the kernel-doc comments of
kernel_iface/uapi/drm/lnpu_accel.h, so the two cannot disagree.

  python3 tools/scripts/uapi_doc.py            rewrite the tables in place
  python3 tools/scripts/uapi_doc.py --check    exit 1 if a table is stale

A table is the text between a marker line
  <!-- uapi_doc.py: KIND [NAME] -->
and the line <!-- /uapi_doc.py -->. KIND is one of
  ioctls          the lnpu ioctls: number, macro, struct, purpose
  struct NAME     the fields of struct NAME (with [in]/[out]/[in/out] for
                  ioctls)
  params          the DRM_LNPU_PARAM_* ids
  capabilities    the DRM_LNPU_CAP_* bits
  bo-flags        the DRM_LNPU_BO_* flags
  submit-flags    the DRM_LNPU_SUBMIT_* flags
The header is also checked: every struct has a kernel-doc comment naming
each of its fields exactly once, and every parameter, capability and flag
a trailing comment. Errors name the header line's symbol and what to fix.
"""
import argparse
import os
import re
import sys

BEGIN = re.compile(r'^<!-- uapi_doc\.py: (\S+)(?: (\S+))? -->$')
END = '<!-- /uapi_doc.py -->'
BIT = r'\(1u?l?l? << (\d+)\)'


class HeaderError(Exception):
    pass


def code(text):
    """Markdown for a description: identifiers in backticks, | escaped."""
    text = re.sub(r'\b((?:DRM_|LNPU_)[A-Z0-9_]*[A-Z0-9*]|__[us]\d+\[\w+\])', r'`\1`', text)
    return text.replace('|', '\\|')


def parse_kernel_doc(header):
    """{struct name: (summary, [(field, description)], text after fields)}"""
    structs = {}
    pattern = re.compile(r'/\*\*\n((?:(?!\*/).)*)\*/\nstruct (\w+) \{\n(.*?)\n\};', re.S)
    for match in pattern.finditer(header):
        lines = [re.sub(r'^ \* ?', '', line) for line in match.group(1).splitlines()]
        name = match.group(2)
        first = re.match(r'struct (\w+) - (.+)$', lines[0])
        if not first or first.group(1) != name:
            raise HeaderError(f'struct {name}: the kernel-doc must start with '
                              f'"struct {name} - <summary>"')
        fields = []
        i = 1
        while i < len(lines) and lines[i].startswith('@'):
            field = re.match(r'@(\w+): (.+)$', lines[i])
            if not field:
                raise HeaderError(f'struct {name}: malformed member line "{lines[i]}"')
            description = field.group(2)
            i += 1
            while i < len(lines) and lines[i].startswith(' ') and lines[i].strip():
                description += ' ' + lines[i].strip()
                i += 1
            fields.append((field.group(1), description))
        declared = re.findall(r'^\s*(?:struct \w+|\w+) (\w+);', match.group(3), re.M)
        documented = [f for f, _ in fields]
        if documented != declared:
            raise HeaderError(f'struct {name}: kernel-doc members {documented} differ from '
                              f'the declared fields {declared} (same names, same order)')
        structs[name] = (first.group(2), fields)
    # A struct without a kernel-doc comment right above it.
    for name in re.findall(r'^struct (\w+) \{', header, re.M):
        if name not in structs:
            raise HeaderError(f'struct {name} has no kernel-doc comment (/** struct {name} - '
                              '...) directly above it')
    return structs


def parse_defines(header, prefix, value_pattern):
    """[(name without prefix, value, trailing comment)] of each #define
    PREFIX* whose value matches value_pattern."""
    defines = []
    pattern = re.compile(r'^#define ' + prefix + r'(\w+) +(\S.*?)(?: +/\*(.*?)\*/)?$',
                         re.M | re.S)
    for match in re.finditer(r'^#define ' + prefix + r'\w+ .*?(?=^#|^/\*|^struct|\Z)',
                             header, re.M | re.S):
        entry = pattern.match(match.group(0).strip())
        if not entry:
            continue
        name, value, comment = entry.groups()
        if name == 'COUNT' or not re.fullmatch(value_pattern, value.strip()):
            continue
        if comment is None:
            raise HeaderError(f'#define {prefix}{name} has no trailing /* comment */ '
                              '(its meaning in the docs)')
        defines.append((name, value.strip(), ' '.join(comment.split())))
    if not defines:
        raise HeaderError(f'no #define {prefix}* found')
    return defines


def bit(value):
    return re.fullmatch(BIT, value).group(1)


def table(header_row, rows):
    lines = ['| ' + ' | '.join(header_row) + ' |', '| ' + ' | '.join('---' for _ in header_row) + ' |']
    lines += ['| ' + ' | '.join(row) + ' |' for row in rows]
    return lines


def generate(kind, name, header, structs):
    if kind == 'ioctls':
        rows = []
        numbers = dict(re.findall(r'^#define DRM_LNPU_(\w+) (0x[0-9a-f]+)$', header, re.M))
        for ioctl, command, struct in re.findall(
                r'^#define DRM_IOCTL_LNPU_(\w+) \\\n  DRM_IOWR\(DRM_COMMAND_BASE \+ DRM_LNPU_(\w+), '
                r'struct (\w+)\)', header, re.M):
            rows.append([numbers[command], f'`DRM_IOCTL_LNPU_{ioctl}`', f'`{struct}`',
                         code(structs[struct][0])])
        return table(['nr', 'ioctl', 'struct', 'purpose'], rows)
    if kind == 'struct':
        if name not in structs:
            raise HeaderError(f'docs/uapi.md asks for struct {name}, which the header lacks')
        fields = structs[name][1]
        if all(re.match(r'\[(in|out|in/out)\] ', d) for _, d in fields):
            return table(['field', 'dir', 'meaning'],
                         [[f'`{f}`', d[1:d.index(']')], code(d[d.index(']') + 2:])]
                          for f, d in fields])
        return table(['field', 'meaning'], [[f'`{f}`', code(d)] for f, d in fields])
    if kind == 'params':
        return table(['id', 'name', 'value'],
                     [[v, f'`{n}`', code(c)] for n, v, c in parse_defines(header, 'DRM_LNPU_PARAM_', r'\d+')])
    if kind == 'capabilities':
        return table(['capability', 'bit', 'meaning'],
                     [[f'`DRM_LNPU_CAP_{n}`', bit(v), code(c)]
                      for n, v, c in parse_defines(header, 'DRM_LNPU_CAP_', BIT)])
    flag_prefixes = {'bo-flags': 'DRM_LNPU_BO_', 'submit-flags': 'DRM_LNPU_SUBMIT_'}
    if kind in flag_prefixes:
        prefix = flag_prefixes[kind]
        return table(['flag', 'bit', 'meaning'],
                     [[f'`{prefix}{n}`', bit(v), code(c)]
                      for n, v, c in parse_defines(header, prefix, BIT)])
    raise HeaderError(f'docs/uapi.md: unknown table kind "{kind}"')


def render(doc, header):
    structs = parse_kernel_doc(header)
    out, lines, i = [], doc.splitlines(), 0
    tables = 0
    while i < len(lines):
        out.append(lines[i])
        begin = BEGIN.match(lines[i])
        i += 1
        if not begin:
            continue
        end = i
        while end < len(lines) and lines[end] != END:
            end += 1
        if end == len(lines):
            raise HeaderError(f'docs/uapi.md: "{lines[i - 1]}" has no {END} line')
        out += generate(begin.group(1), begin.group(2), header, structs)
        out.append(END)
        tables += 1
        i = end + 1
    if tables == 0:
        raise HeaderError('docs/uapi.md has no <!-- uapi_doc.py: ... --> table')
    return '\n'.join(out) + '\n'


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='fail if docs/uapi.md is stale')
    parser.add_argument('--header', default=os.path.join(root, 'kernel_iface/uapi/drm/lnpu_accel.h'))
    parser.add_argument('--doc', default=os.path.join(root, 'docs/uapi.md'))
    args = parser.parse_args()
    with open(args.header) as f:
        header = f.read()
    with open(args.doc) as f:
        doc = f.read()
    try:
        generated = render(doc, header)
    except HeaderError as error:
        print(f'uapi_doc.py: {error}', file=sys.stderr)
        return 1
    if generated == doc:
        return 0
    if args.check:
        print(f'uapi_doc.py: {args.doc} does not match {args.header}; regenerate its tables '
              'with: python3 tools/scripts/uapi_doc.py', file=sys.stderr)
        return 1
    with open(args.doc, 'w') as f:
        f.write(generated)
    return 0


if __name__ == '__main__':
    sys.exit(main())

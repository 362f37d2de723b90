import { ByTag } from '../../tokens/by-tag.js';
import { taggedSha256 } from '../../tokens/content-tag.js';
import type { Address, Addresser } from '../address.js';

/**
 * The addresses of the parts of tagged messages (a tool result, a call's arguments, the message
 * whole) that compaction offloaded, by the message's tag (`by-tag.ts`: found by the tag itself,
 * not a key joined of the tag and the part and hashed on every call), under a selector of the
 * caller's addresser (`Addresser.keyName`: never shared between callers), the format, the unit and
 * its slot. 8 MiB per thread, least recently used out by halves.
 */
const byTag = new ByTag<Address>(8 * 1024 * 1024, (a) => a.id.length + a.sha256.length, 120);

/**
 * The address of a part of the message tagged `tag` (`json` makes its JSON, read only if the
 * part was never hashed): found by the tag when this caller named it before; else its digest
 * found or made (`taggedSha256`, shared by every caller: content alone) and its id under the
 * caller's key.
 */
export function partAddress(address: Addresser, tag: string, format: string, kind: string, slot: number, json: () => string) {
  const selector = `${address.keyName}\0${format}\0${kind}\0${slot}`;
  const known = byTag.get(tag, selector);
  if (known !== undefined) return known;
  const made = address.ofDigest(taggedSha256(`${tag}\0${format}\0${kind}\0${slot}`, json));
  byTag.set(tag, selector, made);
  return made;
}

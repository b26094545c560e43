/**
 * Disks: programs whose job is to overwrite, format or repartition a block device. They are refused
 * by name, whatever the device, because a device name says little (`/dev/sdb` may be the only
 * disk) and none of them belongs in an agent's day. Writes to disk devices by other programs
 * (`> /dev/sda`, `tee /dev/nvme0n1`, `cp x /dev/sdb`) are judged where files are written.
 */
import { found, type Handler } from '../context.js';
import { register, registerPattern } from '../registry.js';
import { code } from '../words.js';

export const blockName =
  (rule: string, what: string): Handler =>
  (name, _args, _cmd, ctx) =>
    found(ctx, rule, `${code(name)}${what}`);

/** Blocks when a verb (or option) among the arguments matches. */
const blockVerb =
  (rule: string, verbs: RegExp, what: string): Handler =>
  (name, args, _cmd, ctx) => {
    const verb = args.find((w) => verbs.test(w.text));
    return verb ? found(ctx, rule, `${code(name + ' ' + verb.source)} ${what}`) : null;
  };

register(['dd', 'ddrescue', 'dcfldd', 'dc3dd', 'sg_dd'], blockName('dd', ' copies raw blocks and can overwrite a whole disk'));
register(
  ['mkfs', 'mke2fs', 'mkswap', 'wipefs', 'mkdosfs', 'mkntfs', 'mkexfatfs', 'blkdiscard', 'mkudffs'],
  blockName('mkfs', ' creates or wipes a filesystem'),
);
registerPattern(/^(mkfs\.|newfs)/, blockName('mkfs', ' creates or wipes a filesystem'));
register(['badblocks'], blockVerb('mkfs', /^-[a-zA-Z]*w/, 'overwrites every block of the device'));
register(['mdadm'], blockVerb('mkfs', /^(--create|-C|--zero-superblock|--build|-B|--grow|-G)$/, 'rewrites a RAID array or its disks'));
register(['format'], blockName('format', ' formats a disk'));
register(
  ['diskutil'],
  blockVerb(
    'format',
    /^(erasedisk|erasevolume|reformat|partitiondisk|zerodisk|randomdisk|secureerase|erasecd|splitpartition|mergepartitions)$/i,
    'erases or repartitions a disk',
  ),
);
register(
  ['hdparm'],
  blockVerb(
    'format',
    /^--(security-erase|security-erase-enhanced|trim-sector-ranges|write-sector|make-bad-sector|dco-restore|fwdownload)/,
    'erases or rewrites the disk',
  ),
);
register(['nvme'], blockVerb('format', /^(format|sanitize|write-zeroes|ns-delete|delete-ns)$/, 'erases the NVMe drive'));
register(['cryptsetup'], blockVerb('format', /^(luksformat|erase|luksErase|reencrypt)$/i, 'destroys the data on the device'));
register(['pvremove', 'vgremove', 'lvremove', 'pvcreate', 'vgcreate'], blockName('format', ' rewrites LVM volumes'));
register(['zpool'], blockVerb('format', /^(create|destroy|labelclear|add|replace)$/, 'rewrites a ZFS pool'));
register(['zfs'], blockVerb('format', /^(destroy|rollback)$/, 'destroys ZFS data'));
register(['flashrom'], blockVerb('format', /^(-w|--write|-E|--erase)$/, 'rewrites the firmware flash'));
register(['fdisk', 'sfdisk', 'cfdisk', 'gdisk', 'sgdisk', 'cgdisk'], blockName('fdisk', " edits a disk's partition table"));
register(['parted', 'gparted'], blockName('parted', " edits a disk's partitions"));

-- tombstones
INSERT INTO `_readside_tombstones` (projection, key_text, version) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE version = GREATEST(version, _rs_new.version)

-- tombstone lookup
SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?, ?)

-- first tombstone lookup (with the truncation floor)
SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?, ?) UNION ALL SELECT NULL, version FROM `_readside_truncations` WHERE projection = ?

-- truncation
INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?) AS _rs_new ON DUPLICATE KEY UPDATE version = GREATEST(version, _rs_new.version)

-- truncated at
SELECT version FROM `_readside_truncations` WHERE projection = ?

-- offsets
INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, _rs_new.next_offset)

-- watermarks
INSERT INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE gtid = IF(_rs_new.version > version, _rs_new.gtid, gtid), source_ts = IF(_rs_new.version > version, _rs_new.source_ts, source_ts), version = GREATEST(version, _rs_new.version)

-- routing generation (live projectors, first in every transaction)
SELECT generation FROM `_readside_routing` WHERE projection = ? FOR SHARE


-- tombstones
INSERT INTO `_readside_tombstones` (projection, key_text, version) VALUES (?, ?, ?), (?, ?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))

-- tombstone lookup
SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?, ?)

-- first tombstone lookup (with the truncation floor)
SELECT key_text, version FROM `_readside_tombstones` WHERE projection = ? AND key_text IN (?, ?) UNION ALL SELECT NULL, version FROM `_readside_truncations` WHERE projection = ?

-- truncation
INSERT INTO `_readside_truncations` (projection, version) VALUES (?, ?) ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))

-- truncated at
SELECT version FROM `_readside_truncations` WHERE projection = ?

-- offsets
INSERT INTO `_readside_offsets` (projection, topic, part, next_offset) VALUES (?, ?, ?, ?), (?, ?, ?, ?) ON DUPLICATE KEY UPDATE next_offset = GREATEST(next_offset, VALUES(next_offset))

-- watermarks
INSERT INTO `_readside_watermarks` (projection, topic, part, gtid, version, source_ts) VALUES (?, ?, ?, ?, ?, ?), (?, ?, ?, ?, ?, ?) ON DUPLICATE KEY UPDATE gtid = IF(VALUES(version) > version, VALUES(gtid), gtid), source_ts = IF(VALUES(version) > version, VALUES(source_ts), source_ts), version = GREATEST(version, VALUES(version))

-- routing generation (live projectors, first in every transaction)
SELECT generation FROM `_readside_routing` WHERE projection = ? LOCK IN SHARE MODE


-- comment
/* readside messages_with_sender */ 

-- upsert (version guard)
INSERT INTO `messages_with_sender` (`id`, `body`, `sender_id`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `sender_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`sender_id` <=> `sender_id`), NULL, `sender_name`), `_rs_v_join1` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`sender_id` <=> `sender_id`), 0, `_rs_v_join1`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `body` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`body`, `body`), `sender_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`sender_id`, `sender_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `messages_with_sender` (`id`, `body`, `sender_id`, `_rs_version`) VALUES (?, ?, ?, ?), (?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `sender_name` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`sender_id` <=> `sender_id`), NULL, `sender_name`), `_rs_v_join1` = IF(_rs_new.`_rs_version` > `_rs_version` AND NOT (_rs_new.`sender_id` <=> `sender_id`), 0, `_rs_v_join1`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `body` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`body`, `body`), `sender_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`sender_id`, `sender_id`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- guarded delete
DELETE FROM `messages_with_sender` WHERE (`id` = ? AND `_rs_version` < ?) OR (`id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `messages_with_sender` WHERE _rs_version < ?

-- join chat.users: lock parents
INSERT INTO `_readside_join_messages_with_sender_1` (`k_id`, `_rs_version`) VALUES (?, 0), (?, 0) AS _rs_new ON DUPLICATE KEY UPDATE `k_id` = `k_id`

-- join chat.users: parent state
INSERT INTO `_readside_join_messages_with_sender_1` (`k_id`, `c_sender_name`, `_rs_version`) VALUES (?, ?, ?), (?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `c_sender_name` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`c_sender_name`, `c_sender_name`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- join chat.users: truncate state
UPDATE `_readside_join_messages_with_sender_1` SET `c_sender_name` = NULL, `_rs_version` = ? WHERE `_rs_version` < ?

-- join chat.users: truncate read copies
UPDATE `messages_with_sender` SET `sender_name` = NULL, `_rs_v_join1` = ? WHERE `_rs_v_join1` < ?

-- join chat.users: fan-out
UPDATE `messages_with_sender` AS r JOIN `_readside_join_messages_with_sender_1` AS s ON r.`sender_id` = s.`k_id` SET r.`sender_name` = s.`c_sender_name`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND s.`k_id` IN (?, ?)

-- join chat.users: fill the rows the batch writes
UPDATE `messages_with_sender` AS r STRAIGHT_JOIN `_readside_join_messages_with_sender_1` AS s ON r.`sender_id` = s.`k_id` SET r.`sender_name` = s.`c_sender_name`, r.`_rs_v_join1` = s.`_rs_version` WHERE r.`_rs_v_join1` < s.`_rs_version` AND r.`id` IN (?, ?)


-- comment
/* readside messages_by_sender */ 

-- upsert (version guard)
INSERT INTO `messages_by_sender` (`sender_id`, `created_at`, `id`, `body`, `_rs_version`) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `sender_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`sender_id`, `sender_id`), `created_at` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`created_at`, `created_at`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `body` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`body`, `body`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- lenient upsert (ENUM index 0)
SET STATEMENT sql_mode = TRIM(BOTH ',' FROM REPLACE(CONCAT(',', @@SESSION.sql_mode, ','), ',STRICT_ALL_TABLES,', ',')) FOR INSERT INTO `messages_by_sender` (`sender_id`, `created_at`, `id`, `body`, `_rs_version`) VALUES (?, ?, ?, ?, ?), (?, ?, ?, ?, ?) AS _rs_new ON DUPLICATE KEY UPDATE `sender_id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`sender_id`, `sender_id`), `created_at` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`created_at`, `created_at`), `id` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`id`, `id`), `body` = IF(_rs_new.`_rs_version` > `_rs_version`, _rs_new.`body`, `body`), `_rs_version` = GREATEST(`_rs_version`, _rs_new.`_rs_version`)

-- guarded delete
DELETE FROM `messages_by_sender` WHERE (`sender_id` = ? AND `created_at` = ? AND `id` = ? AND `_rs_version` < ?) OR (`sender_id` = ? AND `created_at` = ? AND `id` = ? AND `_rs_version` < ?)

-- truncate rows
DELETE FROM `messages_by_sender` WHERE _rs_version < ?


package sourcedb

// NotRowEnd is a condition on a row of information_schema table view
// (STATISTICS or KEY_COLUMN_USAGE) that leaves out the ROW END column of
// a MariaDB system-versioned table declared with named period columns.
// MariaDB adds that column to every unique key of such a table, so that
// past versions of a row share its key; the key of the table's current
// rows, which readside captures, is the one declared. (A ROW END column
// that is not named is not listed by information_schema at all.) A key
// part that is an expression (COLUMN_NAME NULL) stays.
func NotRowEnd(view string) string {
	return " AND (COLUMN_NAME IS NULL OR COLUMN_NAME NOT IN (SELECT rowend.COLUMN_NAME FROM information_schema.COLUMNS rowend WHERE rowend.TABLE_SCHEMA = " + view +
		".TABLE_SCHEMA AND rowend.TABLE_NAME = " + view + ".TABLE_NAME AND rowend.GENERATION_EXPRESSION = 'ROW END'))"
}

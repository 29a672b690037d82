/**
 * `tilth import csv`'s reader: the export's CSV format read back (jsonapi/csv-read.ts, where the
 * web interface's spreadsheet import reads it too).
 */
export { recordsFromCsv, CsvFileError, type CsvRecord } from '../jsonapi/csv-read.ts';

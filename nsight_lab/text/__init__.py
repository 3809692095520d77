"""Text a person reads: safe to show (terminal, spreadsheet), units, DataFrame forms."""

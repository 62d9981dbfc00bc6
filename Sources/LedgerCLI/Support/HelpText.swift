import Foundation

/// A command's discussion as ArgumentParser should get it: each paragraph's wrapped source lines
/// joined into one line, so that `--help` wraps it once, at the terminal's width.
///
/// Why: ArgumentParser keeps every newline it is given and then wraps each line again at 80
/// columns, so a source line of 90 columns came out as a full line and an orphan word.
///
/// Kept as they are: blank lines (between paragraphs), indented lines (examples, commands) and
/// lines that start a list item (`- `, `• `, `1. `).
func helpText(_ text: String) -> String {
    var lines: [String] = []
    for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
        let startsItem = line.hasPrefix("- ") || line.hasPrefix("• ")
            || line.range(of: #"^\d+\. "#, options: .regularExpression) != nil
        if let last = lines.last, !last.isEmpty, !last.hasPrefix(" "), !line.isEmpty, !line.hasPrefix(" "), !startsItem
        {
            lines[lines.count - 1] = last + " " + line
        } else {
            lines.append(line)
        }
    }
    return lines.joined(separator: "\n")
}

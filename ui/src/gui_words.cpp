#include "manifold/ui/gui_words.h"

#include <QRegularExpression>

#include <utility>

namespace manifold::ui {
namespace {

/// The options the parameter panel edits, longest first where one is a
/// prefix of another (--time-limit before --t).
const std::pair<const char*, const char*> kFieldOfOption[] = {
    {"local-scaling", "Local scaling"},
    {"max-matvecs", "Max mat-vecs"},
    {"time-limit", "Time limit"},
    {"components", "Components"},
    {"symmetrize", "Symmetrise"},
    {"epsilon", "\u03b5"},
    {"backend", "Backend"},
    {"devices", "Devices"},
    {"metric", "Metric"},
    {"alpha", "\u03b1"},
    {"k", "k"},
    {"t", "t"},
};

}  // namespace

QString guiWords(const QString& message) {
  QString out = message;
  for (const auto& [option, field] : kFieldOfOption) {
    const QString name = QString::fromUtf8(field);
    const QString flag = QStringLiteral("--") + QLatin1String(option);
    const QString escaped = QRegularExpression::escape(flag);
    // "--epsilon VALUE": the field's value in general.
    out.replace(QRegularExpression(escaped + QStringLiteral("\\s+VALUE\\b")), QStringLiteral("an %1 value").arg(name));
    // "try --epsilon 12.5": a value for the field.
    out.replace(QRegularExpression(QStringLiteral("\\b(try|give|use|set) ") + escaped +
                                   QStringLiteral("\\s+(-?[0-9][0-9.eE+-]*)")),
                QStringLiteral("\\1 %1 = \\2").arg(name));
    // Any other mention: the field's name. The option must end there, so
    // --t is not read inside --threads.
    out.replace(QRegularExpression(escaped + QStringLiteral("(?![A-Za-z0-9-])")), name);
  }
  return out;
}

}  // namespace manifold::ui

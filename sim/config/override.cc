#include "sim/config/override.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "isa/error.h"

namespace tpusim::sim {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::EnumValueDescriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::vector<std::string> Split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = text.find(separator, begin);
    parts.push_back(text.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) return parts;
    begin = end + 1;
  }
}

std::string FieldNames(const Descriptor& descriptor) {
  std::string names;
  for (int i = 0; i < descriptor.field_count(); ++i) {
    if (i > 0) names += ", ";
    names += descriptor.field(i)->name();
  }
  return names;
}

std::string EnumNames(const google::protobuf::EnumDescriptor& descriptor) {
  std::string names;
  for (int i = 0; i < descriptor.value_count(); ++i) {
    if (i > 0) names += ", ";
    names += descriptor.value(i)->name();
  }
  return names;
}

// What went wrong with one value; the caller adds the `--set ASSIGNMENT: ` prefix.
struct ValueError {
  std::string message;
};

template <typename Int>
Int ParseInteger(const std::string& text, const FieldDescriptor& field, const std::string& path) {
  Int value{};
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error == std::errc::result_out_of_range) {
    throw ValueError{fmt::format("\"{}\" is out of range for {} ({} is a {})", text, path, path,
                                 field.type_name())};
  }
  if (error != std::errc() || ptr != end) {
    const bool is_unsigned = !std::numeric_limits<Int>::is_signed;
    throw ValueError{fmt::format("\"{}\" is not a{} integer ({} is a {})", text,
                                 is_unsigned ? " non-negative" : "n", path, field.type_name())};
  }
  return value;
}

double ParseFloating(const std::string& text, const FieldDescriptor& field, const std::string& path) {
  double value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, error] = std::from_chars(text.data(), end, value);
  if (error != std::errc() || ptr != end) {
    throw ValueError{fmt::format("\"{}\" is not a number ({} is a {})", text, path, field.type_name())};
  }
  return value;
}

bool ParseBool(const std::string& text, const std::string& path) {
  if (text == "true") return true;
  if (text == "false") return false;
  throw ValueError{fmt::format("\"{}\" is not a bool ({} takes true or false)", text, path)};
}

const EnumValueDescriptor* ParseEnum(const std::string& text, const FieldDescriptor& field,
                                     const std::string& path) {
  if (const EnumValueDescriptor* value = field.enum_type()->FindValueByName(text)) return value;
  throw ValueError{fmt::format("\"{}\" is not a value of {} ({} takes one of {})", text,
                               field.enum_type()->full_name(), path, EnumNames(*field.enum_type()))};
}

// Sets (or, for a repeated field, appends) one scalar value.
void SetScalar(Message& message, const FieldDescriptor& field, const std::string& text,
               const std::string& path) {
  const Reflection& reflection = *message.GetReflection();
  const bool add = field.is_repeated();
  switch (field.cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: {
      const auto value = ParseInteger<int32_t>(text, field, path);
      add ? reflection.AddInt32(&message, &field, value) : reflection.SetInt32(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_INT64: {
      const auto value = ParseInteger<int64_t>(text, field, path);
      add ? reflection.AddInt64(&message, &field, value) : reflection.SetInt64(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_UINT32: {
      const auto value = ParseInteger<uint32_t>(text, field, path);
      add ? reflection.AddUInt32(&message, &field, value) : reflection.SetUInt32(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      const auto value = ParseInteger<uint64_t>(text, field, path);
      add ? reflection.AddUInt64(&message, &field, value) : reflection.SetUInt64(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      const double value = ParseFloating(text, field, path);
      add ? reflection.AddDouble(&message, &field, value) : reflection.SetDouble(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_FLOAT: {
      const double value = ParseFloating(text, field, path);
      if (std::isfinite(value) && std::abs(value) > std::numeric_limits<float>::max()) {
        throw ValueError{fmt::format("\"{}\" is out of range for {} ({} is a float)", text, path, path)};
      }
      const auto single = static_cast<float>(value);
      add ? reflection.AddFloat(&message, &field, single) : reflection.SetFloat(&message, &field, single);
      return;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      const bool value = ParseBool(text, path);
      add ? reflection.AddBool(&message, &field, value) : reflection.SetBool(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_ENUM: {
      const EnumValueDescriptor* value = ParseEnum(text, field, path);
      add ? reflection.AddEnum(&message, &field, value) : reflection.SetEnum(&message, &field, value);
      return;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      add ? reflection.AddString(&message, &field, text) : reflection.SetString(&message, &field, text);
      return;
    case FieldDescriptor::CPPTYPE_MESSAGE:
      break;  // handled by the caller
  }
}

void SetField(Message& message, const FieldDescriptor& field, const std::string& value,
              const std::string& path) {
  const Reflection& reflection = *message.GetReflection();
  if (field.cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
    if (field.is_map() || field.is_repeated()) {
      throw ValueError{fmt::format("{} is a {}; --set cannot change it (edit the file)", path,
                                   field.is_map() ? "map" : "list of messages")};
    }
    if (value != "none") {
      throw ValueError{fmt::format("{} is a message: set one of its fields ({}.FIELD=VALUE; its "
                                   "fields: {}) or remove it with {}=none",
                                   path, path, FieldNames(*field.message_type()), path)};
    }
    reflection.ClearField(&message, &field);
    return;
  }
  if (!field.is_repeated()) {
    SetScalar(message, field, value, path);
    return;
  }
  // A list is replaced whole. (An error part-way leaves it part-set, but an error ends the load.)
  reflection.ClearField(&message, &field);
  if (value.empty()) return;
  for (const std::string& item : Split(value, ',')) SetScalar(message, field, item, path);
}

}  // namespace

std::string ApplyOverride(Message& message, const std::string& assignment) {
  const auto fail = [&](const std::string& what) -> Error {
    return Error("--set " + assignment + ": " + what);
  };
  const std::size_t equals = assignment.find('=');
  if (equals == std::string::npos) {
    throw fail("expected PATH=VALUE, e.g. --set hbm.channel_count=8");
  }
  const std::string path = assignment.substr(0, equals);
  const std::string value = assignment.substr(equals + 1);
  const std::vector<std::string> names = Split(path, '.');

  Message* current = &message;
  std::string walked;  // the dotted path of `current`
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (name.empty()) throw fail("empty field name in \"" + path + "\"");
    const Descriptor& descriptor = *current->GetDescriptor();
    const FieldDescriptor* field = descriptor.FindFieldByName(name);
    if (field == nullptr) {
      throw fail(fmt::format("{} has no field \"{}\" (its fields: {})",
                             walked.empty() ? descriptor.name() : walked, name, FieldNames(descriptor)));
    }
    const std::string field_path = walked.empty() ? name : walked + "." + name;
    if (i + 1 == names.size()) {
      try {
        SetField(*current, *field, value, field_path);
      } catch (const ValueError& error) {
        throw fail(error.message);
      }
      return field_path;
    }
    if (field->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) {
      throw fail(fmt::format("{} is a {}, not a message", field_path, field->type_name()));
    }
    if (field->is_repeated()) {
      throw fail(fmt::format("{} is a {}; --set cannot reach into it (edit the file)", field_path,
                             field->is_map() ? "map" : "list of messages"));
    }
    current = current->GetReflection()->MutableMessage(current, field);
    walked = field_path;
  }
  throw fail("empty field path");  // unreachable: Split returns at least one name
}

}  // namespace tpusim::sim

// The PJRT C API table of libtessera_pjrt.so, called as a framework calls it: hostile arguments
// come back as errors naming what was wrong (never a crash), and the functions Tessera does not
// offer answer UNIMPLEMENTED naming themselves.

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "xla/pjrt/c/pjrt_c_api.h"

extern "C" const PJRT_Api* GetPjrtApi();

namespace {

using ::testing::HasSubstr;

// The error's code and message, the error destroyed; {OK, ""} for nullptr.
std::pair<PJRT_Error_Code, std::string> Take(const PJRT_Api* api, PJRT_Error* error) {
  if (error == nullptr) return {PJRT_Error_Code_OK, ""};
  PJRT_Error_GetCode_Args code{PJRT_Error_GetCode_Args_STRUCT_SIZE, nullptr, error, {}};
  EXPECT_EQ(api->PJRT_Error_GetCode(&code), nullptr);
  PJRT_Error_Message_Args message{PJRT_Error_Message_Args_STRUCT_SIZE, nullptr, error, {}, {}};
  api->PJRT_Error_Message(&message);
  std::string text(message.message, message.message_size);
  PJRT_Error_Destroy_Args destroy{PJRT_Error_Destroy_Args_STRUCT_SIZE, nullptr, error};
  api->PJRT_Error_Destroy(&destroy);
  return {code.code, text};
}

class PjrtApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    api_ = GetPjrtApi();
    ASSERT_NE(api_, nullptr);
    PJRT_NamedValue options[2] = {};
    options[0].struct_size = PJRT_NamedValue_STRUCT_SIZE;
    options[0].name = "cpu_devices";
    options[0].name_size = 11;
    options[0].type = PJRT_NamedValue_kInt64;
    options[0].int64_value = 2;
    options[0].value_size = 1;
    options[1].struct_size = PJRT_NamedValue_STRUCT_SIZE;
    options[1].name = "vulkan";
    options[1].name_size = 6;
    options[1].type = PJRT_NamedValue_kString;
    options[1].string_value = "off";
    options[1].value_size = 3;
    PJRT_Client_Create_Args create{};
    create.struct_size = PJRT_Client_Create_Args_STRUCT_SIZE;
    create.create_options = options;
    create.num_options = 2;
    ASSERT_EQ(Take(api_, api_->PJRT_Client_Create(&create)).first, PJRT_Error_Code_OK);
    client_ = create.client;
    PJRT_Client_Devices_Args devices{};
    devices.struct_size = PJRT_Client_Devices_Args_STRUCT_SIZE;
    devices.client = client_;
    ASSERT_EQ(Take(api_, api_->PJRT_Client_Devices(&devices)).first, PJRT_Error_Code_OK);
    ASSERT_EQ(devices.num_devices, 2u);
    device_ = devices.devices[0];
  }
  void TearDown() override {
    PJRT_Client_Destroy_Args destroy{PJRT_Client_Destroy_Args_STRUCT_SIZE, nullptr, client_};
    EXPECT_EQ(Take(api_, api_->PJRT_Client_Destroy(&destroy)).first, PJRT_Error_Code_OK);
  }

  // The arguments of a BufferFromHostBuffer of `data` onto the first device, copied during the
  // call.
  PJRT_Client_BufferFromHostBuffer_Args PutArgs(const void* data, const int64_t* dims,
                                                size_t num_dims, PJRT_Buffer_Type type) const {
    PJRT_Client_BufferFromHostBuffer_Args args{};
    args.struct_size = PJRT_Client_BufferFromHostBuffer_Args_STRUCT_SIZE;
    args.client = client_;
    args.data = data;
    args.type = type;
    args.dims = dims;
    args.num_dims = num_dims;
    args.host_buffer_semantics = PJRT_HostBufferSemantics_kImmutableOnlyDuringCall;
    args.device = device_;
    return args;
  }

  const PJRT_Api* api_ = nullptr;
  PJRT_Client* client_ = nullptr;
  PJRT_Device* device_ = nullptr;
};

TEST_F(PjrtApiTest, EverySlotIsFilledAndTheVersionIsTheHeaders) {
  EXPECT_EQ(api_->pjrt_api_version.major_version, PJRT_API_MAJOR);
  EXPECT_EQ(api_->pjrt_api_version.minor_version, PJRT_API_MINOR);
  // After the version, the table is function pointers only: none may be NULL.
  const auto* first = reinterpret_cast<const char*>(&api_->PJRT_Error_Destroy);
  const auto* end = reinterpret_cast<const char*>(api_) + api_->struct_size;
  for (const char* slot = first; slot < end; slot += sizeof(void*)) {
    EXPECT_NE(*reinterpret_cast<void* const*>(slot), nullptr)
        << "slot " << (slot - first) / sizeof(void*);
  }
}

TEST_F(PjrtApiTest, UnofferedFunctionsAnswerUnimplementedNamingThemselves) {
  PJRT_Client_TopologyDescription_Args args{};
  args.struct_size = PJRT_Client_TopologyDescription_Args_STRUCT_SIZE;
  args.client = client_;
  auto [code, message] = Take(api_, api_->PJRT_Client_TopologyDescription(&args));
  EXPECT_EQ(code, PJRT_Error_Code_UNIMPLEMENTED);
  EXPECT_THAT(message, HasSubstr("PJRT_Client_TopologyDescription"));
}

TEST_F(PjrtApiTest, HostileBufferArgumentsAreErrors) {
  float data[4] = {1, 2, 3, 4};
  int64_t dims[1] = {4};
  auto put = [&](size_t num_dims, const int64_t* d, PJRT_Buffer_Type type) {
    PJRT_Client_BufferFromHostBuffer_Args args = PutArgs(data, d, num_dims, type);
    return Take(api_, api_->PJRT_Client_BufferFromHostBuffer(&args));
  };
  EXPECT_THAT(put(uint64_t{1} << 40, dims, PJRT_Buffer_Type_F32).second,
              HasSubstr("1099511627776 dimensions (at most 1024)"));
  EXPECT_THAT(put(1, nullptr, PJRT_Buffer_Type_F32).second, HasSubstr("dims is NULL"));
  EXPECT_THAT(put(1, dims, PJRT_Buffer_Type_C64).second, HasSubstr("no element type"));
  int64_t negative[1] = {-4};
  EXPECT_EQ(put(1, negative, PJRT_Buffer_Type_F32).first, PJRT_Error_Code_INVALID_ARGUMENT);
  EXPECT_EQ(Take(api_, api_->PJRT_Client_BufferFromHostBuffer(nullptr)).first,
            PJRT_Error_Code_INVALID_ARGUMENT);
}

// A buffer's ready event, and the host buffer's done event, of work already done: each can be
// waited on, asked, given a callback (which runs at once) and destroyed, in any number, the events
// of the same future shared or not; a NULL buffer's event is an error naming the argument.
TEST_F(PjrtApiTest, EventsOfFinishedWorkAreEachDestroyedAndStayUsable) {
  float data[4] = {1, 2, 3, 4};
  int64_t dims[1] = {4};
  PJRT_Client_BufferFromHostBuffer_Args put = PutArgs(data, dims, 1, PJRT_Buffer_Type_F32);
  ASSERT_EQ(Take(api_, api_->PJRT_Client_BufferFromHostBuffer(&put)).first, PJRT_Error_Code_OK);
  std::vector<PJRT_Event*> events = {put.done_with_host_buffer};
  for (int i = 0; i < 3; ++i) {
    PJRT_Buffer_ReadyEvent_Args ready{PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, nullptr, put.buffer,
                                      nullptr};
    ASSERT_EQ(Take(api_, api_->PJRT_Buffer_ReadyEvent(&ready)).first, PJRT_Error_Code_OK);
    events.push_back(ready.event);
  }
  for (PJRT_Event* event : events) {
    PJRT_Event_Await_Args await{PJRT_Event_Await_Args_STRUCT_SIZE, nullptr, event};
    EXPECT_EQ(Take(api_, api_->PJRT_Event_Await(&await)).first, PJRT_Error_Code_OK);
    PJRT_Event_IsReady_Args is_ready{PJRT_Event_IsReady_Args_STRUCT_SIZE, nullptr, event, false};
    EXPECT_EQ(Take(api_, api_->PJRT_Event_IsReady(&is_ready)).first, PJRT_Error_Code_OK);
    EXPECT_TRUE(is_ready.is_ready);
    int calls = 0;
    PJRT_Event_OnReady_Args on_ready{PJRT_Event_OnReady_Args_STRUCT_SIZE, nullptr, event,
                                     [](PJRT_Error* error, void* count) {
                                       EXPECT_EQ(error, nullptr);
                                       ++*static_cast<int*>(count);
                                     },
                                     &calls};
    EXPECT_EQ(Take(api_, api_->PJRT_Event_OnReady(&on_ready)).first, PJRT_Error_Code_OK);
    EXPECT_EQ(calls, 1);
    PJRT_Event_Destroy_Args destroy{PJRT_Event_Destroy_Args_STRUCT_SIZE, nullptr, event};
    EXPECT_EQ(Take(api_, api_->PJRT_Event_Destroy(&destroy)).first, PJRT_Error_Code_OK);
  }
  PJRT_Buffer_ReadyEvent_Args null_buffer{PJRT_Buffer_ReadyEvent_Args_STRUCT_SIZE, nullptr, nullptr,
                                          nullptr};
  EXPECT_THAT(Take(api_, api_->PJRT_Buffer_ReadyEvent(&null_buffer)).second,
              HasSubstr("PJRT_Buffer_ReadyEvent_Args.buffer is NULL"));
  PJRT_Buffer_Destroy_Args destroy{PJRT_Buffer_Destroy_Args_STRUCT_SIZE, nullptr, put.buffer};
  EXPECT_EQ(Take(api_, api_->PJRT_Buffer_Destroy(&destroy)).first, PJRT_Error_Code_OK);
}

}  // namespace

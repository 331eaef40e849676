// The C++ side of the agent tests: NVTX's nvtx3.hpp RAII API (scoped ranges in a custom
// domain, registered strings, payloads, categories, colors, marks, function ranges), run
// under the agent by test_agent_nvtx, which checks the resulting records.
#include <nvtx3/nvtx3.hpp>

#include <cstdio>

namespace
{

struct app_domain {
    static constexpr char const *name{"cpp-app"};
};

struct step_message {
    static constexpr char const *message{"step"};
};

void traced_function()
{
    NVTX3_FUNC_RANGE(); // named after the function
}

} // namespace

int main()
{
    auto const &step = nvtx3::registered_string_in<app_domain>::get<step_message>();
    nvtx3::named_category_in<app_domain> const io{11, "io"};
    {
        nvtx3::scoped_range_in<app_domain> outer{"cpp-outer", nvtx3::rgb{255, 0, 0}};
        for (int i = 0; i < 3; ++i) {
            nvtx3::scoped_range_in<app_domain> inner{step, nvtx3::payload{static_cast<int64_t>(i)},
                                                     io};
        }
        nvtx3::mark_in<app_domain>("cpp-mark", nvtx3::payload{0.5});
    }
    traced_function();
    std::puts("done");
    return 0;
}

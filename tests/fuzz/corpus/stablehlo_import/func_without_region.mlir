"builtin.module"() ({
  "func.func"() <{function_type = () -> (), sym_name = "main"}> : () -> ()
}) : () -> ()

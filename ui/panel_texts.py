"""What the memory panel writes (its notes, lists, plots and notices), the Reset question and the
versions lists' labels, in English and 繁體中文.
Part of ui/texts.py's catalogs (`tr()`); kept apart for their size."""

from __future__ import annotations

EN: dict[str, str] = {
    # notes
    "mp_no_conversation": "_No conversation yet: send a first message._",
    "mp_pins_empty": "_Pinned facts appear here._",
    "mp_no_summary": "_No summary in the memory: it is written when the conversation grows long._",
    "mp_covers_one": "covers {n} earlier message",
    "mp_covers_many": "covers {n} earlier messages",
    "mp_edited": "✏️ **Edited by you** — the model gets your text ({what}).",
    "mp_written": "Written by the summarizer ({what}). Edit it and save: the model gets your text.",
    "mp_pins_used": (
        "{n} pinned here · {sent} of {pin_budget} characters for pins (of the {budget} memory "
        "budget)"
    ),
    "mp_about_on_one": "👤 **About me is on**: {n} fact sent in every conversation.",
    "mp_about_on_many": "👤 **About me is on**: {n} facts sent in every conversation.",
    "mp_about_off_one": "About me is off: {n} fact kept but not sent.",
    "mp_about_off_many": "About me is off: {n} facts kept but not sent.",
    "mp_type_draft": "_Type a message: the older turns it would bring back show here._",
    "mp_nothing_older": "_Nothing older matches this message._",
    "mp_come_back_one": "{n} older message would come back:",
    "mp_come_back_many": "{n} older messages would come back:",
    # plots: titles, axes and the names of their lines
    "mp_plots_none": "_No replies yet: from the first one, each reply's characters by part, "
    "its tokens and its seconds are drawn here._",
    "mp_plots_one": "_One reply so far: {figures}. From the second reply on, each reply's "
    "figures are drawn here as lines._",
    "mp_plots_one_unmeasured": "_One reply so far, with nothing measured to draw. From the "
    "second reply on, each reply's figures are drawn here as lines._",
    "mp_plots_one_chars": "it was sent {n} characters ({parts})",
    "mp_plots_one_tokens": "{input} tokens in and {output} out",
    "mp_plots_one_seconds": "{s} s",
    "mp_parts_sep": ", ",
    "mp_figures_sep": ", ",
    "plot_parts": "Characters sent, by part",
    "plot_tokens": "Tokens per reply",
    "plot_latency": "Seconds per reply",
    "plot_turn": "Turn",
    "plot_chars": "Characters",
    "plot_tokens_axis": "Tokens",
    "plot_seconds": "Seconds",
    "plot_part_legend": "part",
    "plot_kind_legend": "kind",
    "part_persona": "persona",
    "part_pinned": "pinned",
    "part_summary": "summary",
    "part_recalled": "recalled",
    "part_recent": "recent",
    "part_budget": "budget",
    "kind_input": "input",
    "kind_output": "output",
    # notices: titles, then messages
    "t_no_summary_yet": "No summary yet",
    "t_summary": "Summary",
    "t_pinned": "Pinned",
    "t_nothing_ticked": "Nothing ticked",
    "t_unpinned": "Unpinned",
    "t_about_me": "About me",
    "t_nothing_to_export": "Nothing to export",
    "t_no_file": "No file",
    "t_imported": "Imported",
    "t_persona_differs": "Persona differs",
    "t_data_deleted": "Data deleted",
    "no_summary_yet": "This chat has no summary yet: send a first message.",
    "summary_saved": "Summary saved: the model gets your text from the next message on.",
    "summary_cleared": "Summary cleared: the model gets none until the next one is written.",
    "pinned_about_me": "Pinned to about me: the model always gets it.",
    "pinned_here": "Pinned to this conversation: the model always gets it.",
    "tick_first": "Tick the facts to delete first.",
    "unpinned_one": "Deleted {n} pinned fact.",
    "unpinned_many": "Deleted {n} pinned facts.",
    "about_me_on": "“About me” is on: those facts reach all your conversations.",
    "about_me_off": "“About me” is off: those facts stay listed but are not sent.",
    "export_unsaved": "This chat is not saved yet: send a first message, then export it.",
    "pick_export": "Pick a Mnemo export file (.json) to import.",
    "imported_one": "Imported {n} conversation.",
    "imported_many": "Imported {n} conversations.",
    "delete_all_one": (
        "Delete **all your data**: {n} conversation with its messages, summaries and pinned "
        "facts, your “about me” facts and your saved personas? This cannot be undone; export "
        "first to keep a copy."
    ),
    "delete_all_many": (
        "Delete **all your data**: {n} conversations with their messages, summaries and pinned "
        "facts, your “about me” facts and your saved personas? This cannot be undone; export "
        "first to keep a copy."
    ),
    "deleted_all": "Deleted all your data ({n} conversations).",
    # the versions lists of the Personas and Roundtables tabs (ui.texts.version_label)
    "version_builtin": "v{version} · built-in",
    "version_saved": "v{version} · saved {when}",
    # the Reset question
    "reset_the_summary": "the summary",
    "reset_the_title": "the title “{title}”",
    "reset_and": " and ",
    "reset_list": ", ",
    "reset_question": (
        "Forget this conversation? **{what}** will go, and searching will not find them. "
        "Your “about me” facts stay."
    ),
}

ZH_TW: dict[str, str] = {
    "mp_no_conversation": "_還沒有對話：先送出第一則訊息。_",
    "mp_pins_empty": "_釘選的事實會列在這裡。_",
    "mp_no_summary": "_記憶中還沒有摘要：對話變長時會自動寫下。_",
    "mp_covers_one": "涵蓋先前 {n} 則訊息",
    "mp_covers_many": "涵蓋先前 {n} 則訊息",
    "mp_edited": "✏️ **由你編輯** — 模型收到的是你的文字（{what}）。",
    "mp_written": "由摘要器寫下（{what}）。編輯後儲存，模型就會收到你的文字。",
    "mp_pins_used": (
        "這段對話釘選了 {n} 則 · 釘選用了 {sent}／{pin_budget} 字元（記憶預算共 {budget}）"
    ),
    "mp_about_on_one": "👤 **「關於我」已開啟**：{n} 則事實會送到每段對話。",
    "mp_about_on_many": "👤 **「關於我」已開啟**：{n} 則事實會送到每段對話。",
    "mp_about_off_one": "「關於我」已關閉：{n} 則事實保留著，但不會送出。",
    "mp_about_off_many": "「關於我」已關閉：{n} 則事實保留著，但不會送出。",
    "mp_type_draft": "_輸入訊息：它會喚起的較早對話會顯示在這裡。_",
    "mp_nothing_older": "_沒有較早的內容符合這則訊息。_",
    "mp_come_back_one": "會喚起 {n} 則較早的訊息：",
    "mp_come_back_many": "會喚起 {n} 則較早的訊息：",
    "mp_plots_none": "_還沒有回覆：從第一則起，每次回覆送出的字元（依部分）、"
    "詞元數和秒數會畫在這裡。_",
    "mp_plots_one": "_目前只有一則回覆：{figures}。從第二則起，每次回覆的數字會畫成線在這裡。_",
    "mp_plots_one_unmeasured": "_目前只有一則回覆，沒有量到可畫的數字。"
    "從第二則起，每次回覆的數字會畫成線在這裡。_",
    "mp_plots_one_chars": "送出 {n} 個字元（{parts}）",
    "mp_plots_one_tokens": "輸入 {input} 個詞元、輸出 {output} 個",
    "mp_plots_one_seconds": "{s} 秒",
    "mp_parts_sep": "、",
    "mp_figures_sep": "，",
    "plot_parts": "送出的字元，依部分",
    "plot_tokens": "每次回覆的詞元數",
    "plot_latency": "每次回覆的秒數",
    "plot_turn": "回合",
    "plot_chars": "字元",
    "plot_tokens_axis": "詞元數",
    "plot_seconds": "秒",
    "plot_part_legend": "部分",
    "plot_kind_legend": "種類",
    "part_persona": "角色",
    "part_pinned": "釘選",
    "part_summary": "摘要",
    "part_recalled": "喚起",
    "part_recent": "近期",
    "part_budget": "記憶預算",
    "kind_input": "輸入",
    "kind_output": "輸出",
    "t_no_summary_yet": "還沒有摘要",
    "t_summary": "摘要",
    "t_pinned": "已釘選",
    "t_nothing_ticked": "沒有勾選",
    "t_unpinned": "已取消釘選",
    "t_about_me": "關於我",
    "t_nothing_to_export": "沒有可匯出的內容",
    "t_no_file": "沒有檔案",
    "t_imported": "已匯入",
    "t_persona_differs": "角色不同",
    "t_data_deleted": "資料已刪除",
    "no_summary_yet": "這段對話還沒有摘要：先送出第一則訊息。",
    "summary_saved": "摘要已儲存：從下一則訊息起，模型收到的是你的文字。",
    "summary_cleared": "摘要已清除：在寫下新的摘要之前，模型不會收到摘要。",
    "pinned_about_me": "已釘選到「關於我」：模型每次都會收到。",
    "pinned_here": "已釘選到這段對話：模型每次都會收到。",
    "tick_first": "請先勾選要刪除的事實。",
    "unpinned_one": "已刪除 {n} 則釘選的事實。",
    "unpinned_many": "已刪除 {n} 則釘選的事實。",
    "about_me_on": "「關於我」已開啟：這些事實會送到你所有的對話。",
    "about_me_off": "「關於我」已關閉：這些事實仍列著，但不會送出。",
    "export_unsaved": "這段對話還沒有儲存：先送出第一則訊息，再匯出。",
    "pick_export": "請選擇要匯入的 Mnemo 匯出檔（JSON 檔）。",
    "imported_one": "已匯入 {n} 段對話。",
    "imported_many": "已匯入 {n} 段對話。",
    "delete_all_one": (
        "要刪除**你的所有資料**嗎：{n} 段對話與其中的訊息、摘要和釘選的事實，你的「關於我」事實，"
        "以及你儲存的角色？這無法復原；想保留副本請先匯出。"
    ),
    "delete_all_many": (
        "要刪除**你的所有資料**嗎：{n} 段對話與其中的訊息、摘要和釘選的事實，你的「關於我」事實，"
        "以及你儲存的角色？這無法復原；想保留副本請先匯出。"
    ),
    "deleted_all": "已刪除你的所有資料（{n} 段對話）。",
    "version_builtin": "v{version} · 內建",
    "version_saved": "v{version} · 儲存於 {when}",
    "reset_the_summary": "摘要",
    "reset_the_title": "標題「{title}」",
    "reset_and": "和",
    "reset_list": "、",
    "reset_question": (
        "要忘掉這段對話嗎？**{what}**都會被清除，搜尋也找不到。你的「關於我」事實會保留。"
    ),
}
